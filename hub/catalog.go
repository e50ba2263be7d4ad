package hub

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
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
}

// template is one exposed resource template and the pattern its URIs match.
type template struct {
	server  string
	item    json.RawMessage
	pattern *regexp.Regexp
}

// catalog is one view's merged lists: either every server with prefixed
// names (/mcp) or one server with its own names (/{server}/mcp). It is built
// whole and swapped in; it is never modified afterwards.
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
	c := &catalog{
		toolIndex:     map[string]int{},
		promptIndex:   map[string]int{},
		resourceIndex: map[string]string{},
		items:         map[string][]json.RawMessage{},
		digest:        map[string]string{},
		conflicts:     map[string][]string{},
	}
	conflict := func(server, format string, args ...any) {
		c.conflicts[server] = append(c.conflicts[server], fmt.Sprintf(format, args...))
	}
	for _, src := range sources {
		name := src.spec.Name
		prefix := ""
		if prefixed {
			prefix = src.spec.Prefix
		}
		for _, item := range src.up.List("tools/list") {
			orig, ok := jsonrpc.StringMember(item, "name")
			if !ok || !src.spec.AllowsTool(orig) {
				continue
			}
			c.tools = c.addNamed(c.tools, c.toolIndex, "tool", name, prefix, sep, orig, item, conflict)
		}
		for _, item := range src.up.List("prompts/list") {
			orig, ok := jsonrpc.StringMember(item, "name")
			if !ok {
				continue
			}
			c.prompts = c.addNamed(c.prompts, c.promptIndex, "prompt", name, prefix, sep, orig, item, conflict)
		}
		for _, item := range src.up.List("resources/list") {
			uri, ok := jsonrpc.StringMember(item, "uri")
			if !ok {
				continue
			}
			if owner, dup := c.resourceIndex[uri]; dup {
				conflict(name, "resource %s is also offered by %s, which serves it", uri, owner)
				continue
			}
			c.resourceIndex[uri] = name
			c.resources = append(c.resources, named{server: name, name: uri, item: item})
		}
		for _, item := range src.up.List("resources/templates/list") {
			tpl, ok := jsonrpc.StringMember(item, "uriTemplate")
			if !ok {
				continue
			}
			re, err := templatePattern(tpl)
			if err != nil {
				conflict(name, "resource template %s: %v", tpl, err)
				continue
			}
			c.templates = append(c.templates, template{server: name, item: item, pattern: re})
		}
	}
	for _, n := range c.tools {
		c.items["tools/list"] = append(c.items["tools/list"], n.item)
	}
	for _, n := range c.prompts {
		c.items["prompts/list"] = append(c.items["prompts/list"], n.item)
	}
	for _, n := range c.resources {
		c.items["resources/list"] = append(c.items["resources/list"], n.item)
	}
	for _, t := range c.templates {
		c.items["resources/templates/list"] = append(c.items["resources/templates/list"], t.item)
	}
	for _, k := range listKinds {
		h := sha256.New()
		for _, it := range c.items[k.method] {
			h.Write(it)
			h.Write([]byte{0})
		}
		c.digest[k.method] = hex.EncodeToString(h.Sum(nil))
	}
	return c
}

// addNamed exposes one tool or prompt, renaming it when its name is not one
// clients accept and hiding it when an earlier server took the name.
func (c *catalog) addNamed(list []named, index map[string]int, kind, server, prefix, sep, orig string, item json.RawMessage, conflict func(string, string, ...any)) []named {
	exposed := orig
	if prefix != "" {
		exposed = prefix + sep + orig
	}
	if fixed := safeName(exposed); fixed != exposed {
		conflict(server, "%s %q is exposed as %q (names must be 1-%d characters of A-Za-z0-9_.-)", kind, exposed, fixed, maxNameLen)
		exposed = fixed
	}
	if prev, dup := index[exposed]; dup {
		conflict(server, "%s %q is hidden: %s offers the same name", kind, exposed, list[prev].server)
		return list
	}
	if exposed != orig {
		if out, err := jsonrpc.SetMember(item, "name", jsonrpc.Quote(exposed)); err == nil {
			item = out
		}
	}
	index[exposed] = len(list)
	return append(list, named{server: server, name: orig, item: item})
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
