package hub

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
)

// maxNameLen is the longest tool or prompt name clients accept (several
// clients cut at 64, and the conformance suite checks it).
const maxNameLen = 64

// validName is the character set clients accept in tool and prompt names.
var validName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// listKinds are the four merged lists, by method, with the result member that
// holds their items.
var listKinds = []struct{ method, member string }{
	{"tools/list", "tools"},
	{"prompts/list", "prompts"},
	{"resources/list", "resources"},
	{"resources/templates/list", "resourceTemplates"},
}

// listMember returns the result member of a list method, "" for others.
func listMember(method string) string {
	for _, k := range listKinds {
		if k.method == method {
			return k.member
		}
	}
	return ""
}

// named is one exposed tool or prompt: the server that offers it, the name
// the server knows it by, and the item as clients see it.
type named struct {
	server string
	name   string
	item   json.RawMessage
	// fixed are the arguments an override fixes, set on every call.
	fixed []fixedArg
}

// template is one exposed resource template and the pattern its URIs match.
type template struct {
	server  string
	item    json.RawMessage
	pattern *regexp.Regexp
}

// catalog is one view's merged lists: either every server with prefixed
// names (/mcp) or one server with its own names (/{server}/mcp). It is
// merged whole from the servers' pieces and swapped in; it is never modified
// afterwards.
type catalog struct {
	tools, prompts []named
	toolIndex      map[string]int // exposed name → index in tools
	promptIndex    map[string]int
	resources      []named // name unused; uri routing uses resourceIndex
	resourceIndex  map[string]string
	templates      []template
	// items holds each list's exposed items in order, by method.
	items map[string][]json.RawMessage
	// digest fingerprints each list, to tell whether it changed.
	digest map[string]string
	// conflicts describes names that could not be exposed as offered.
	conflicts map[string][]string
	// search is set for a profile in search mode: tools/list holds the
	// search tools, and the catalog's tools are found through them.
	search *searchView
}

// source is one server as the catalog builder sees it.
type source struct {
	spec *registry.Server
	up   Upstream
}

// buildCatalog merges the lists of sources, in the given order. With
// prefixed set, tool and prompt names become prefix+sep+name (prefix "" means
// the bare name); otherwise names are the server's own. Collisions and names
// clients cannot use are resolved predictably and reported, never fatal.
func buildCatalog(sources []source, prefixed bool, sep string) *catalog {
	pieces := make([]*piece, len(sources))
	for i, src := range sources {
		sh := shaping{sep: sep}
		if prefixed {
			sh.prefix = src.spec.Prefix
		}
		pieces[i] = newPiece(src.spec, listsOf(src.up), sh)
	}
	return mergePieces(pieces)
}

// lists are a server's four lists as its upstream offers them, in
// listKinds order.
type lists [4][]json.RawMessage

// listsOf reads an upstream's lists.
func listsOf(up Upstream) lists {
	var l lists
	for i, k := range listKinds {
		l[i] = up.List(k.method)
	}
	return l
}

// equal reports whether two servers' lists hold the same items.
func (l *lists) equal(o *lists) bool {
	for i := range l {
		if !slices.EqualFunc(l[i], o[i], func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			return false
		}
	}
	return true
}

// piece is one server's part of a view, prepared once per change of its
// lists or of its catalog settings: names read, filtered, prefixed and made
// usable, items renamed, templates compiled and every item fingerprinted.
// Merging pieces only decides collisions, so a view over thousands of
// servers is merged without reading any item again.
type piece struct {
	server  string
	tools   []pieceItem
	prompts []pieceItem
	// resources use name for the URI.
	resources []pieceItem
	templates []template
	tplSums   [][sha256.Size]byte
	// tplConflicts are the templates that could not be used, in order.
	tplConflicts []string
}

// pieceItem is one tool, prompt or resource of a piece.
type pieceItem struct {
	exposed string // the name (or URI) clients see
	orig    string // the server's own name
	item    json.RawMessage
	sum     [sha256.Size]byte
	// renamed says why exposed is not the name as offered; "" when it is.
	renamed string
	fixed   []fixedArg
}

// newPiece prepares one server's lists for a view shaped by sh.
func newPiece(spec *registry.Server, l lists, sh shaping) *piece {
	p := &piece{server: spec.Name}
	for _, item := range l[0] {
		orig, ok := jsonrpc.StringMember(item, "name")
		if !ok || !spec.AllowsTool(orig) {
			continue
		}
		show, want, item, fixed := sh.shapeTool(spec, orig, item)
		if show {
			n := exposeNamed("tool", want, orig, item)
			n.fixed = fixed
			p.tools = append(p.tools, n)
		}
	}
	for _, item := range l[1] {
		if orig, ok := jsonrpc.StringMember(item, "name"); ok {
			want := orig
			if sh.prefix != "" {
				want = sh.prefix + sh.sep + orig
			}
			p.prompts = append(p.prompts, exposeNamed("prompt", want, orig, item))
		}
	}
	for _, item := range l[2] {
		if uri, ok := jsonrpc.StringMember(item, "uri"); ok {
			p.resources = append(p.resources, pieceItem{exposed: uri, orig: uri, item: item, sum: sha256.Sum256(item)})
		}
	}
	for _, item := range l[3] {
		tpl, ok := jsonrpc.StringMember(item, "uriTemplate")
		if !ok {
			continue
		}
		re, err := templatePattern(tpl)
		if err != nil {
			p.tplConflicts = append(p.tplConflicts, fmt.Sprintf("resource template %s: %v", tpl, err))
			continue
		}
		p.templates = append(p.templates, template{server: spec.Name, item: item, pattern: re})
		p.tplSums = append(p.tplSums, sha256.Sum256(item))
	}
	return p
}

// exposeNamed prepares one tool or prompt to be exposed as want, made a
// name clients accept, with its item carrying that name.
func exposeNamed(kind, want, orig string, item json.RawMessage) pieceItem {
	n := pieceItem{exposed: want, orig: orig}
	if fixed := safeName(n.exposed); fixed != n.exposed {
		n.renamed = fmt.Sprintf("%s %q is exposed as %q (names must be 1-%d characters of A-Za-z0-9_.-)", kind, n.exposed, fixed, maxNameLen)
		n.exposed = fixed
	}
	if n.exposed != orig {
		if out, err := jsonrpc.SetMember(item, "name", jsonrpc.Quote(n.exposed)); err == nil {
			item = out
		}
	}
	n.item, n.sum = item, sha256.Sum256(item)
	return n
}

// mergePieces merges servers' pieces, in the given order: a tool, prompt or
// resource URI an earlier server exposes hides a later server's of the same
// name, and every name not exposed as offered is reported. Each list's
// digest is the hash of its items' fingerprints, in order.
func mergePieces(pieces []*piece) *catalog {
	var nt, np, nr, nx int
	for _, p := range pieces {
		nt, np, nr, nx = nt+len(p.tools), np+len(p.prompts), nr+len(p.resources), nx+len(p.templates)
	}
	c := &catalog{
		tools: make([]named, 0, nt), prompts: make([]named, 0, np), resources: make([]named, 0, nr), templates: make([]template, 0, nx),
		toolIndex: make(map[string]int, nt), promptIndex: make(map[string]int, np), resourceIndex: make(map[string]string, nr),
		items: make(map[string][]json.RawMessage, len(listKinds)), digest: make(map[string]string, len(listKinds)), conflicts: map[string][]string{},
	}
	var sums [4]digester
	for i := range sums {
		sums[i].init()
	}
	for _, p := range pieces {
		c.mergeNamed(&c.tools, c.toolIndex, "tool", p.server, p.tools, &sums[0])
		c.mergeNamed(&c.prompts, c.promptIndex, "prompt", p.server, p.prompts, &sums[1])
		for _, r := range p.resources {
			if owner, dup := c.resourceIndex[r.exposed]; dup {
				c.conflict(p.server, fmt.Sprintf("resource %s is also offered by %s, which serves it", r.exposed, owner))
				continue
			}
			c.resourceIndex[r.exposed] = p.server
			c.resources = append(c.resources, named{server: p.server, name: r.exposed, item: r.item})
			sums[2].add(&r.sum)
		}
		c.templates = append(c.templates, p.templates...)
		for i := range p.tplSums {
			sums[3].add(&p.tplSums[i])
		}
		for _, msg := range p.tplConflicts {
			c.conflict(p.server, msg)
		}
	}
	for i, list := range [][]named{c.tools, c.prompts, c.resources} {
		items := make([]json.RawMessage, len(list))
		for j, n := range list {
			items[j] = n.item
		}
		c.items[listKinds[i].method] = items
	}
	tpls := make([]json.RawMessage, len(c.templates))
	for j, t := range c.templates {
		tpls[j] = t.item
	}
	c.items[listKinds[3].method] = tpls
	for i, k := range listKinds {
		c.digest[k.method] = sums[i].hex()
	}
	return c
}

func (c *catalog) conflict(server, msg string) {
	c.conflicts[server] = append(c.conflicts[server], msg)
}

// mergeNamed adds a piece's tools or prompts to a list, hiding each one
// whose exposed name an earlier item took, and writes the fingerprints of
// the items it added to sums.
func (c *catalog) mergeNamed(list *[]named, index map[string]int, kind, server string, items []pieceItem, sums *digester) {
	for i := range items {
		n := &items[i]
		if n.renamed != "" {
			c.conflict(server, n.renamed)
		}
		if prev, dup := index[n.exposed]; dup {
			c.conflict(server, fmt.Sprintf("%s %q is hidden: %s offers the same name", kind, n.exposed, (*list)[prev].server))
			continue
		}
		index[n.exposed] = len(*list)
		*list = append(*list, named{server: server, name: n.orig, item: n.item, fixed: n.fixed})
		sums.add(&n.sum)
	}
}

// digester hashes a list's item fingerprints, a block at a time.
type digester struct {
	h   hash.Hash
	buf []byte
}

func (d *digester) init() { d.h, d.buf = sha256.New(), make([]byte, 0, 64*sha256.Size) }

func (d *digester) add(sum *[sha256.Size]byte) {
	if len(d.buf) == cap(d.buf) {
		d.h.Write(d.buf)
		d.buf = d.buf[:0]
	}
	d.buf = append(d.buf, sum[:]...)
}

// hex is the digest of what was added, in hex.
func (d *digester) hex() string {
	d.h.Write(d.buf)
	return hex.EncodeToString(d.h.Sum(nil))
}

// tool looks up an exposed tool name.
func (c *catalog) tool(name string) (named, bool) {
	i, ok := c.toolIndex[name]
	if !ok {
		return named{}, false
	}
	return c.tools[i], true
}

// prompt looks up an exposed prompt name.
func (c *catalog) prompt(name string) (named, bool) {
	i, ok := c.promptIndex[name]
	if !ok {
		return named{}, false
	}
	return c.prompts[i], true
}

// safeName makes a name clients accept: characters outside A-Za-z0-9_.- become
// '_', and a name over 64 characters keeps its start and gains a short hash of
// the whole, so it stays unique and stable.
func safeName(name string) string {
	if len(name) <= maxNameLen && name != "" && validName.MatchString(name) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > maxNameLen || s == "" {
		sum := sha256.Sum256([]byte(name))
		s = s[:min(len(s), maxNameLen-9)] + "_" + hex.EncodeToString(sum[:4])
	}
	return s
}

// resourceServer finds the server that serves uri: an exact resource first,
// then the first template that matches.
func (c *catalog) resourceServer(uri string) (string, bool) {
	if s, ok := c.resourceIndex[uri]; ok {
		return s, true
	}
	for _, t := range c.templates {
		if t.pattern.MatchString(uri) {
			return t.server, true
		}
	}
	return "", false
}

// templatePattern turns an RFC 6570 URI template into a pattern matching the
// URIs it can expand to. Each operator's expansion decides what a variable
// may match: simple and label expressions stop at URI delimiters, reserved
// and fragment expansions match anything, path and query expressions match
// their repeated segments.
func templatePattern(tpl string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for len(tpl) > 0 {
		open := strings.IndexByte(tpl, '{')
		if open < 0 {
			b.WriteString(regexp.QuoteMeta(tpl))
			break
		}
		b.WriteString(regexp.QuoteMeta(tpl[:open]))
		end := strings.IndexByte(tpl[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("unclosed '{'")
		}
		expr := tpl[open+1 : open+end]
		tpl = tpl[open+end+1:]
		op := byte(0)
		if expr != "" && strings.IndexByte("+#./;?&", expr[0]) >= 0 {
			op, expr = expr[0], expr[1:]
		}
		if expr == "" {
			return nil, fmt.Errorf("empty expression")
		}
		switch op {
		case 0:
			b.WriteString(`[^/?#&]*`)
		case '+':
			b.WriteString(`[^#]*`)
		case '#':
			b.WriteString(`(?:#.*)?`)
		case '.':
			b.WriteString(`(?:\.[^/?#.]*)*`)
		case '/':
			b.WriteString(`(?:/[^/?#]*)*`)
		case ';':
			b.WriteString(`(?:;[^/?#]*)*`)
		case '?', '&':
			b.WriteString(`(?:[?&][^#]*)?`)
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// listPageSize is how many items one page of a merged list holds.
var listPageSize = 500

// page returns one page of a list and the cursor of the next, "" at the end.
// Cursors are opaque to clients: they encode the list and an offset.
func (c *catalog) page(method, cursor string) ([]json.RawMessage, string, error) {
	items := c.items[method]
	off := 0
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		kind, n, ok := strings.Cut(string(raw), ":")
		if err != nil || !ok || kind != method {
			return nil, "", fmt.Errorf("invalid cursor")
		}
		if off, err = strconv.Atoi(n); err != nil || off < 0 || off > len(items) {
			return nil, "", fmt.Errorf("invalid cursor")
		}
	}
	end := min(off+listPageSize, len(items))
	next := ""
	if end < len(items) {
		next = base64.RawURLEncoding.EncodeToString([]byte(method + ":" + strconv.Itoa(end)))
	}
	return items[off:end], next, nil
}
