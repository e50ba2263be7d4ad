package registry

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// The edit functions change hub.toml as text, because re-encoding the TOML
// would drop the user's comments and layout: they cut or splice byte spans
// found by the locator, re-parse the result and write it only when it is
// valid, atomically (temporary file, fsync, exchange or rename, fsync of the
// directory), with the original file's mode, under an edit lock that every
// mcphub process respects (lock.go), and read the result back.
//
// Validation of the result uses the real environment with one exception: an
// unset ${VAR} does not block the edit. The CLI that edits the file may run
// with a different environment from the hub that reads it (a service
// manager, another shell), so whether a variable is set is the hub's
// business: the hub shows a server whose variable it lacks as failed, naming
// the variable, and serves the rest. `mcphub add` asks the running hub and
// warns before that happens.

// AddServer appends s as a new [servers.NAME] block at the end of the file
// at path, creating the file (mode 0600) when it does not exist. When the
// name exists already it fails with ErrServerExists unless force is set; then
// the old block (with its subtables) is replaced in place and the comments
// above it are kept.
func AddServer(path string, s ServerSpec, force bool) error {
	if msg := checkName(s.Name); msg != "" {
		return fmt.Errorf("registry: %s", msg)
	}
	block, err := encodeServer(s)
	if err != nil {
		return err
	}
	change := func(src []byte, lay *layout, reg *Registry) ([]byte, error) {
		if !lay.mentions(s.Name) {
			return appendBlock(src, block), nil
		}
		if !force {
			return nil, &editError{sentinel: ErrServerExists,
				msg: fmt.Sprintf("server %q already exists in %s (use --force to replace it)", s.Name, filepath.Base(path))}
		}
		return replaceServer(src, lay, s.Name, block)
	}
	verify := func(reg *Registry) error {
		got := reg.Server(s.Name)
		if got == nil || !specEqual(got.Spec(), s) {
			return fmt.Errorf("registry: internal error: adding server %q did not give the expected result; %s was not changed", s.Name, path)
		}
		return nil
	}
	return editFile(path, s.Name, true, change, verify)
}

// RemoveServer deletes the [servers.NAME] table, its subtables and the
// comment lines directly above its header. An unknown name gives an error
// that lists the servers the file has.
func RemoveServer(path, name string) error {
	change := func(src []byte, lay *layout, reg *Registry) ([]byte, error) {
		if !lay.mentions(name) {
			return nil, unknownServer(path, name, reg)
		}
		if why := viewsNeed(reg, name, true); len(why) > 0 {
			return nil, &editError{msg: fmt.Sprintf("not removing server %q from %s: %s (nothing was changed)", name, filepath.Base(path), strings.Join(why, "; "))}
		}
		return removeServer(src, lay, name)
	}
	verify := func(reg *Registry) error {
		if reg.Server(name) != nil {
			return fmt.Errorf("registry: internal error: server %q is still there after removing it; %s was not changed", name, path)
		}
		return nil
	}
	return editFile(path, name, false, change, verify)
}

// SetEnabled sets enabled = true or false in the server's table, replacing
// the value where it is written or inserting the key under the header. It
// writes nothing when the server is already in that state.
func SetEnabled(path, name string, enabled bool) error {
	want := "false"
	if enabled {
		want = "true"
	}
	change := func(src []byte, lay *layout, reg *Registry) ([]byte, error) {
		s := reg.Server(name)
		if s == nil || !lay.mentions(name) {
			return nil, unknownServer(path, name, reg)
		}
		if s.Enabled == enabled {
			return nil, nil
		}
		if !enabled {
			if why := viewsNeed(reg, name, false); len(why) > 0 {
				return nil, &editError{msg: fmt.Sprintf("not disabling server %q in %s: %s (nothing was changed)", name, filepath.Base(path), strings.Join(why, "; "))}
			}
		}
		if i := lay.entry("servers", name, "enabled"); i >= 0 {
			e := lay.entries[i]
			return splice(src, e.valStart, e.valEnd, want), nil
		}
		h := lay.header("servers", name)
		if h < 0 {
			return nil, notATable(name)
		}
		at := lay.headers[h].end
		line := "enabled = " + want + "\n"
		if at > 0 && src[at-1] != '\n' {
			line = "\n" + line
		}
		return splice(src, at, at, line), nil
	}
	verify := func(reg *Registry) error {
		if s := reg.Server(name); s == nil || s.Enabled != enabled {
			return fmt.Errorf("registry: internal error: setting enabled = %s on %q did not take; %s was not changed", want, name, path)
		}
		return nil
	}
	return editFile(path, name, false, change, verify)
}

// viewsNeed says why the profiles and overrides of reg need server name,
// which an edit would remove (removing) or disable, and what to change
// first; nil when they do not. Without it the result of the edit would
// have a profile's or an override's problem.
func viewsNeed(reg *Registry, name string, removing bool) []string {
	k := knownServers(reg, nil)
	k2 := k.after(name, removing)
	sep := reg.Hub.Separator
	others := func(n string) bool { return n != name && k.has(n) }
	// An override belongs to name when name claims its key and no other
	// server would.
	orphan := func(key string) bool {
		srv, ok := serverOf(key, reg.Hub.Separator, k.has)
		_, other := serverOf(key, reg.Hub.Separator, others)
		return ok && srv == name && !other
	}
	var why []string
	if removing {
		for _, key := range slices.Sorted(maps.Keys(reg.Overrides)) {
			if orphan(key) {
				why = append(why, fmt.Sprintf("%s changes one of its tools; remove that table first", toml.Key{"overrides", key}))
			}
		}
	}
	for _, pr := range reg.Profiles {
		if removing && slices.Contains(pr.Servers, name) {
			at := toml.Key{"profiles", pr.Name, "servers"}
			why = append(why, fmt.Sprintf("profile %q names it in %s; remove it from %s first", pr.Name, at, at))
		}
		if removing {
			for _, key := range slices.Sorted(maps.Keys(pr.Overrides)) {
				if orphan(key) {
					why = append(why, fmt.Sprintf("profile %q changes one of its tools in %s; remove that table first", pr.Name, toml.Key{"profiles", pr.Name, "overrides", key}))
				}
			}
		}
		// An include glob would name no server of the profile; a tag
		// would be no server's. (A disabled server keeps both valid.)
		if sep != "" {
			for _, g := range pr.Include {
				if checkGlob(g) == "" && globTakesServer(g, sep, k.selected(pr, true)) && !globTakesServer(g, sep, k2.selected(pr, true)) {
					why = append(why, fmt.Sprintf("profile %q names it in %s (%q); remove or change that glob first", pr.Name, toml.Key{"profiles", pr.Name, "include"}, g))
				}
			}
		}
		for _, tag := range pr.Tags {
			if slices.Contains(k.allTags, tag) && !slices.Contains(k2.allTags, tag) {
				why = append(why, fmt.Sprintf("profile %q selects by tag %q, which no other server has; remove the tag from %s first", pr.Name, tag, toml.Key{"profiles", pr.Name, "tags"}))
			}
		}
		// Taking a server out of servers would not make its profile
		// select nothing, but every server when it was the only one: that
		// is the user's to decide, in the profile.
		if removing && slices.Contains(pr.Servers, name) {
			continue
		}
		if sel := k.selected(pr, false); len(sel) == 1 && sel[0] == name {
			why = append(why, fmt.Sprintf("profile %q would select no enabled server, as %q is the only one it selects; give it another (in %s or %s) first, or remove [%s]",
				pr.Name, name, toml.Key{"profiles", pr.Name, "servers"}, toml.Key{"profiles", pr.Name, "tags"}, toml.Key{"profiles", pr.Name}))
		}
	}
	return why
}

// editError is an edit refusal that wraps a sentinel or the problems found.
type editError struct {
	msg      string
	sentinel error
}

func (e *editError) Error() string { return "registry: " + e.msg }
func (e *editError) Unwrap() error { return e.sentinel }

// resultError refuses an edit whose result would not validate. Its text
// leaves out line numbers, which would point into text that is not on disk.
type resultError struct {
	path string
	errs Errors
}

func (e *resultError) Error() string {
	return fmt.Sprintf("registry: not changing %s, the result would be invalid:\n%s", e.path, e.errs.unpositioned())
}
func (e *resultError) Unwrap() error { return e.errs }

func unknownServer(path, name string, reg *Registry) error {
	var names []string
	if reg != nil {
		for _, s := range reg.Servers {
			names = append(names, s.Name)
		}
	}
	known := "it has no servers"
	if len(names) > 0 {
		known = "known servers: " + strings.Join(names, ", ")
	}
	if close := suggest(name, names, nil); close != "" {
		known = fmt.Sprintf("did you mean %q? %s", close, known)
	}
	return &editError{sentinel: ErrUnknownServer,
		msg: fmt.Sprintf("no server %q in %s; %s", name, filepath.Base(path), known)}
}

func notATable(name string) error {
	return fmt.Errorf("registry: server %q is not written as a [servers.%s] table, so it cannot be edited automatically; edit the file by hand", name, name)
}

func splice(src []byte, from, to int, text string) []byte {
	out := make([]byte, 0, len(src)-(to-from)+len(text))
	out = append(out, src[:from]...)
	out = append(out, text...)
	return append(out, src[to:]...)
}

func appendBlock(src []byte, block string) []byte {
	out := slices.Clone(src)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	if len(bytes.TrimSpace(out)) > 0 && !bytes.HasSuffix(out, []byte("\n\n")) {
		out = append(out, '\n')
	}
	return append(out, block...)
}

// mentions reports whether any header or key belongs to servers.NAME.
func (l *layout) mentions(name string) bool {
	p := []string{"servers", name}
	for _, h := range l.headers {
		if hasPrefix(h.key, p) {
			return true
		}
	}
	for _, e := range l.entries {
		if hasPrefix(e.key, p) {
			return true
		}
	}
	return false
}

// span is a byte range of the file.
type span struct{ start, end int }

// serverSpans finds the byte ranges of [servers.NAME] and its subtables,
// each run of consecutive headers as one span that ends where the comment
// block directly above the next table begins. withComments also takes the
// comment block directly above each run's first header when a blank line
// (or the start of the file) separates it from what comes before.
func (l *layout) serverSpans(name string, withComments bool) ([]span, error) {
	p := []string{"servers", name}
	var out []span
	for i := 0; i < len(l.headers); i++ {
		if !hasPrefix(l.headers[i].key, p) {
			continue
		}
		sp := span{start: l.headers[i].start, end: len(l.src)}
		if withComments {
			sp.start = l.attachedStart(l.headers[i].line)
		}
		for i+1 < len(l.headers) && hasPrefix(l.headers[i+1].key, p) {
			i++
		}
		if i+1 < len(l.headers) {
			sp.end = l.lineOff[l.commentBlockStart(l.headers[i+1].line)-1]
		}
		out = append(out, sp)
	}
	if len(out) == 0 {
		return nil, notATable(name)
	}
	// Every key of the server must be inside the spans; keys written with
	// dotted names elsewhere would survive the cut.
	inside := func(off int) bool {
		return slices.ContainsFunc(out, func(s span) bool { return off >= s.start && off < s.end })
	}
	for _, e := range l.entries {
		if hasPrefix(e.key, p) && !inside(e.lineStart) {
			return nil, notATable(name)
		}
	}
	return out, nil
}

// commentBlockStart returns the first line of the comment lines directly
// above line (line itself when there are none).
func (l *layout) commentBlockStart(line int) int {
	for line > 1 && l.kinds[line-2] == lineComment {
		line--
	}
	return line
}

// attachedStart returns the byte offset where a header's own comments
// begin: the comment block directly above it, if that block does not
// continue the previous table's keys.
func (l *layout) attachedStart(line int) int {
	first := l.commentBlockStart(line)
	if first < line && first > 1 {
		if k := l.kinds[first-2]; k != lineBlank && k != lineHeader {
			first = line
		}
	}
	return l.lineOff[first-1]
}

func removeServer(src []byte, lay *layout, name string) ([]byte, error) {
	spans, err := lay.serverSpans(name, true)
	if err != nil {
		return nil, err
	}
	out := src
	for i := len(spans) - 1; i >= 0; i-- {
		out = splice(out, spans[i].start, spans[i].end, "")
	}
	return tidyEnd(out), nil
}

// replaceServer puts block where the first span of the old server was and
// drops the rest of it, keeping the comments above the old header.
func replaceServer(src []byte, lay *layout, name, block string) ([]byte, error) {
	spans, err := lay.serverSpans(name, false)
	if err != nil {
		return nil, err
	}
	out := src
	for i := len(spans) - 1; i >= 0; i-- {
		text := ""
		if i == 0 {
			text = block
			if spans[0].end < len(src) {
				text += "\n"
			}
		}
		out = splice(out, spans[i].start, spans[i].end, text)
	}
	return tidyEnd(out), nil
}

// tidyEnd leaves exactly one newline at the end of a non-empty file, so
// removing the last server does not leave blank lines behind.
func tidyEnd(b []byte) []byte {
	t := bytes.TrimRight(b, " \t\r\n")
	if len(t) == 0 {
		return t
	}
	return append(t, '\n')
}

// specEqual compares two specs the way the file would hold them.
func specEqual(a, b ServerSpec) bool {
	norm := func(s ServerSpec) ServerSpec {
		if s.Transport == TransportAuto {
			s.Transport = ""
		}
		if s.Share == ShareServer {
			s.Share = ""
		}
		if s.Protocol == ProtocolAuto {
			s.Protocol = ""
		}
		if s.Prefix != nil && *s.Prefix == s.Name {
			s.Prefix = nil
		}
		if s.ConnectTimeout == DefaultConnectTimeout {
			s.ConnectTimeout = 0
		}
		if s.CallTimeout == DefaultCallTimeout {
			s.CallTimeout = 0
		}
		return s
	}
	a, b = norm(a), norm(b)
	samePrefix := (a.Prefix == nil) == (b.Prefix == nil) && (a.Prefix == nil || *a.Prefix == *b.Prefix)
	return a.Name == b.Name && a.Command == b.Command && slices.Equal(a.Args, b.Args) &&
		maps.Equal(a.Env, b.Env) && a.Cwd == b.Cwd && a.URL == b.URL && a.Transport == b.Transport &&
		maps.Equal(a.Headers, b.Headers) && a.Disabled == b.Disabled && samePrefix &&
		a.Share == b.Share && a.Protocol == b.Protocol && slices.Equal(a.Allow, b.Allow) && slices.Equal(a.Deny, b.Deny) &&
		slices.Equal(a.Tags, b.Tags) &&
		a.ConnectTimeout == b.ConnectTimeout && a.CallTimeout == b.CallTimeout &&
		slices.Equal(a.EnvPassthrough, b.EnvPassthrough) && a.InheritEnv == b.InheritEnv
}
