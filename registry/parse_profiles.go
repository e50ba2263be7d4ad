package registry

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

var (
	profileKeys    = []string{"servers", "tags", "include", "exclude", "prefixed", "mode", "overrides"}
	profileAliases = map[string]string{"server": "servers", "tag": "tags", "allow": "include", "deny": "exclude",
		"prefix": "prefixed", "override": "overrides"}
	overrideKeys    = []string{"name", "title", "description", "annotations", "args"}
	overrideAliases = map[string]string{"rename": "name", "arguments": "args", "fixed": "args", "hints": "annotations"}
	annotationKeys  = []string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
	// annotationAliases are the spellings of other configs and of habit.
	annotationAliases = map[string]string{
		"read_only_hint": "readOnlyHint", "read_only": "readOnlyHint", "readOnly": "readOnlyHint", "readonly": "readOnlyHint",
		"destructive_hint": "destructiveHint", "destructive": "destructiveHint",
		"idempotent_hint": "idempotentHint", "idempotent": "idempotentHint",
		"open_world_hint": "openWorldHint", "open_world": "openWorldHint", "openWorld": "openWorldHint"}
)

// tags reads a server's tags. An invalid tag is the server's problem and is
// left out of s.Tags, so no profile selects by it or is told of it; a
// profile's tags cannot then be checked (p.tagsUnsure).
func (p *parser) tags(t *table, s *Server) {
	if !t.strs("tags", &s.Tags) {
		if t.has("tags") {
			p.tagsUnsure = true
		}
		return
	}
	for i, tag := range s.Tags {
		if !validTag(tag) {
			t.errf("tags", "entry %d (%q) is not a tag; use 1-32 characters of a-z, 0-9 and '-'", i+1, tag)
			p.tagsUnsure = true
		}
	}
	s.Tags = slices.DeleteFunc(s.Tags, func(tag string) bool { return !validTag(tag) })
}

func validTag(tag string) bool {
	if len(tag) < 1 || len(tag) > 32 {
		return false
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// validToolName reports whether clients accept name as a tool's name.
func validToolName(name string) bool {
	if len(name) < 1 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// known is what profiles and overrides are checked against: every name
// under [servers], whether its entry parsed or not (one that is not even a
// table counts as enabled and without tags, as ParseServing keeps it), so
// that a server's own problem never becomes a profile's too.
type known struct {
	names   []string // sorted
	enabled map[string]bool
	tags    map[string][]string
	allTags []string // sorted, distinct
}

// knownServers describes reg's servers; raw is the decoded [servers] table,
// when there is one, for the entries that did not parse.
func knownServers(reg *Registry, raw any) *known {
	k := &known{enabled: map[string]bool{}, tags: map[string][]string{}}
	if m, ok := raw.(map[string]any); ok {
		for name := range m {
			k.enabled[name] = true
		}
	}
	for _, s := range reg.Servers {
		k.enabled[s.Name] = s.Enabled
		k.tags[s.Name] = s.Tags
	}
	k.index()
	return k
}

// index fills in names and allTags from enabled and tags.
func (k *known) index() {
	k.names = slices.Sorted(maps.Keys(k.enabled))
	k.allTags = nil
	for _, n := range k.names {
		k.allTags = append(k.allTags, k.tags[n]...)
	}
	slices.Sort(k.allTags)
	k.allTags = slices.Compact(k.allTags)
}

// after is k once server name is removed (removing) or disabled.
func (k *known) after(name string, removing bool) *known {
	out := &known{enabled: maps.Clone(k.enabled), tags: maps.Clone(k.tags)}
	switch {
	case removing:
		delete(out.enabled, name)
		delete(out.tags, name)
	case k.has(name):
		out.enabled[name] = false
	}
	out.index()
	return out
}

func (k *known) has(name string) bool { _, ok := k.enabled[name]; return ok }

// selected lists the servers profile pr takes, by name: the enabled ones,
// or with parked, the disabled ones too.
func (k *known) selected(pr *Profile, parked bool) []string {
	var out []string
	for _, n := range k.names {
		if (parked || k.enabled[n]) && pr.SelectsServer(&Server{Name: n, Tags: k.tags[n]}) {
			out = append(out, n)
		}
	}
	return out
}

// serverOf finds the server a qualified name belongs to: the text before a
// separator that is a server's name. It is the text before the first
// separator, unless the separator is one that server names may hold ("-").
func serverOf(qualified, sep string, isServer func(string) bool) (string, bool) {
	if sep == "" {
		return "", false
	}
	for i := 0; i < len(qualified); i++ {
		j := strings.Index(qualified[i:], sep)
		if j < 0 {
			break
		}
		i += j
		if isServer(qualified[:i]) {
			return qualified[:i], true
		}
	}
	return "", false
}

// views reads [profiles] and [overrides], which are checked against the
// servers read before them.
func (p *parser) views(reg *Registry, raw map[string]any) {
	k := knownServers(reg, raw["servers"])
	sep := reg.Hub.Separator
	if !validSeparator(sep) {
		sep = "" // hub.separator's own error says why; names are not checked against it
	}
	reg.Overrides = p.overrides([]string{"overrides"}, raw["overrides"], k, sep)
	p.checkNames(reg, nil, k, sep)
	reg.Profiles = p.profiles(reg, raw["profiles"], k, sep)
}

func (p *parser) profiles(reg *Registry, raw any, k *known, sep string) []*Profile {
	if raw == nil {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		p.fail([]string{"profiles"}, "", "profiles must be a table of profiles; write [profiles.NAME] tables")
		return nil
	}
	out := make([]*Profile, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, p.profile(reg, name, m[name], k, sep))
	}
	return out
}

// profile reads one [profiles.NAME] table. It always returns the profile,
// with what could be read: ParseServing keeps it, with its problems, and
// the hub does not serve it.
func (p *parser) profile(reg *Registry, name string, raw any, k *known, sep string) *Profile {
	path := []string{"profiles", name}
	pr := &Profile{Name: name, Prefixed: true, Mode: ModeFull}
	pr.Line, _ = p.lay.pos(path)
	// Every problem found from here on is the profile's, even when its name
	// is not valid, and even one reported at a global override.
	defer p.own(len(p.errs), name)
	t := &table{p: p, path: path}
	if msg := checkNameOf("profile", name); msg != "" {
		t.at(nil, "%s", msg)
	}
	m, ok := raw.(map[string]any)
	if !ok {
		t.at(nil, "a profile must be a table; write [profiles.%s] followed by its keys", quoteKey(name))
		return pr
	}
	t.m = m
	t.unknown(profileKeys, profileAliases)
	// With servers or tags of the wrong type, what the profile selects is
	// not known, and neither is what its include globs may name.
	unsure := false
	if t.strs("servers", &pr.Servers) {
		for i, n := range pr.Servers {
			if !k.has(n) {
				t.errf("servers", "entry %d (%q) is not a server of this registry%s", i+1, n, didYouMean(n, k.names, "its servers are", "it has no servers"))
			}
		}
	} else {
		unsure = t.has("servers")
	}
	if t.strs("tags", &pr.Tags) {
		for i, tag := range pr.Tags {
			if !p.tagsUnsure && !slices.Contains(k.allTags, tag) {
				t.errf("tags", "entry %d (%q) is not a tag of any server%s", i+1, tag, didYouMean(tag, k.allTags, "the servers' tags are", "no server has tags"))
			}
		}
	} else {
		unsure = unsure || t.has("tags")
	}
	t.globs("include", &pr.Include)
	t.globs("exclude", &pr.Exclude)
	t.boolean("prefixed", &pr.Prefixed)
	var mode string
	if t.str("mode", &mode) {
		switch mode {
		case ModeFull, ModeSearch:
			pr.Mode = mode
		default:
			t.errf("mode", `%q is not a mode; use "full" (the profile's tools as they are, the default) or "search" (three tools that find, describe and call them)`, mode)
		}
	}
	pr.Overrides = p.overrides(append(slices.Clone(path), "overrides"), m["overrides"], k, sep)
	if !unsure {
		p.checkSelection(t, pr, k, sep)
		p.checkNames(reg, pr, k, sep)
	}
	return pr
}

// own marks the problems found since the first of them as profile name's.
func (p *parser) own(first int, name string) {
	for _, e := range p.errs[first:] {
		e.profile, e.inProfile = name, true
	}
}

// checkSelection reports a profile that selects no enabled server, and an
// include glob that names a server the profile does not select. A disabled
// server is parked, not gone: a glob naming it stays valid.
func (p *parser) checkSelection(t *table, pr *Profile, k *known, sep string) {
	if p.tagsUnsure && len(pr.Tags) > 0 {
		return // a server's tags did not parse; its error says so
	}
	if len(k.selected(pr, false)) == 0 {
		t.at(nil, "%s", nothingSelected(pr, k))
	}
	sel := k.selected(pr, true)
	if sep == "" || len(sel) == 0 {
		return
	}
	for _, g := range pr.Include {
		if checkGlob(g) != "" || globTakesServer(g, sep, sel) {
			continue
		}
		head := g[:strings.Index(g, sep)]
		hint := ""
		if k.has(head) {
			hint = fmt.Sprintf("; %q is not one of them: add it to servers, or give it one of the profile's tags", head)
		} else if s := suggest(head, sel, nil); s != "" {
			hint = fmt.Sprintf("; did you mean %q?", s+g[len(head):])
		}
		t.errf("include", "%q matches no server of this profile: the text before %q is matched against the names of its servers (%s)%s", g, sep, nameList(sel), hint)
	}
}

// globTakesServer reports whether a glob on qualified names can match a
// tool of one of servers. Only a glob whose text before the first
// separator is plain text is checked (it is where a server's name is
// mistyped, as in "gitlb__*"); any other counts as matching.
func globTakesServer(g, sep string, servers []string) bool {
	i := strings.Index(g, sep)
	if i < 0 || strings.ContainsAny(g[:i], `*?[\`) {
		return true
	}
	// A name of such a server, with the separator, starts with that text
	// and the separator: the server's name is the text, or (when server
	// names may hold the separator) starts with it.
	lead := g[:i+len(sep)]
	for _, s := range servers {
		if strings.HasPrefix(s+sep, lead) {
			return true
		}
	}
	return false
}

func nothingSelected(pr *Profile, k *known) string {
	if len(pr.Servers)+len(pr.Tags) == 0 {
		return "selects no server: with neither servers nor tags it takes every enabled server, and none is enabled; enable a server or remove the profile"
	}
	if disabled := k.selected(pr, true); len(disabled) > 0 {
		verb := "are"
		if len(disabled) == 1 {
			verb = "is"
		}
		return fmt.Sprintf("selects no enabled server: its servers and tags choose only %s, which %s disabled; enable one, or choose others with servers or tags",
			nameList(disabled), verb)
	}
	return "selects no server: no server of this registry is in its servers or has one of its tags"
}

// checkNames reports two tools of one view given one name by overrides,
// at the later one's name key: in /mcp (pr nil) by the global ones, in
// profile pr by its own and the global ones as Registry.ToolOverride lays
// them over each other. In a profile only the tools of the servers it
// selects, enabled or not, and that it keeps count; two global overrides
// giving one name are [overrides]' own problem, reported once.
func (p *parser) checkNames(reg *Registry, pr *Profile, k *known, sep string) {
	type named struct {
		at        toml.Key // the override table that gives the name
		name      string
		line, col int
	}
	keys := slices.Collect(maps.Keys(reg.Overrides))
	if pr != nil {
		keys = append(keys, slices.Collect(maps.Keys(pr.Overrides))...)
	}
	slices.Sort(keys)
	var ns []named
	for _, key := range slices.Compact(keys) {
		o := reg.ToolOverride(pr, key)
		if o == nil || o.Name == "" {
			continue
		}
		at := toml.Key{"overrides", key}
		if pr != nil {
			if srv, ok := serverOf(key, sep, k.has); !pr.AllowsTool(key) || ok && !pr.SelectsServer(&Server{Name: srv, Tags: k.tags[srv]}) {
				continue
			}
			if po := pr.Overrides[key]; po != nil && po.Name != "" {
				at = toml.Key{"profiles", pr.Name, "overrides", key}
			}
		}
		ln, col := p.lay.pos(append(slices.Clone(at), "name"))
		ns = append(ns, named{at, o.Name, ln, col})
	}
	slices.SortFunc(ns, func(a, b named) int {
		return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.col, b.col), strings.Compare(a.at.String(), b.at.String()))
	})
	first := map[string]named{}
	for _, n := range ns {
		f, dup := first[n.name]
		switch {
		case !dup:
			first[n.name] = n
		case pr == nil:
			p.fail(append(slices.Clone(n.at), "name"), "", "%q is also the name of %s (line %d); two tools of one view cannot share a name", n.name, f.at, f.line)
		case f.at[0] != "overrides" || n.at[0] != "overrides":
			p.fail(append(slices.Clone(n.at), "name"), "", "%q is also the name of %s (line %d) in profile %q; two tools of one view cannot share a name", n.name, f.at, f.line, pr.Name)
		}
	}
}

// overrides reads a table of tool overrides by qualified name: [overrides]
// or a profile's overrides.
func (p *parser) overrides(at []string, raw any, k *known, sep string) map[string]*ToolOverride {
	if raw == nil {
		return nil
	}
	t := &table{p: p, path: at}
	m, ok := raw.(map[string]any)
	if !ok {
		t.at(nil, `must be a table of tool overrides; write [%s."SERVER%sTOOL"] tables, one per tool`, toml.Key(at), cmp.Or(sep, DefaultSeparator))
		return nil
	}
	t.m = m
	out := map[string]*ToolOverride{}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		keyOK := p.checkQualified(t, key, k, sep)
		if o := p.override(append(slices.Clone(at), key), m[key]); o != nil && keyOK {
			out[key] = o
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// checkQualified checks the key of an override: a server of the registry,
// the separator and a tool's name.
func (p *parser) checkQualified(t *table, key string, k *known, sep string) bool {
	if sep == "" {
		return true
	}
	if srv, ok := serverOf(key, sep, k.has); ok {
		if len(key) == len(srv)+len(sep) {
			t.errf(key, "names no tool; write the tool's own name after %q", srv+sep)
			return false
		}
		return true
	}
	i := strings.Index(key, sep)
	if i < 0 {
		t.errf(key, "%q is not a qualified tool name: it has no %q; write the server's name, %q and the tool's own name, as in \"github%screate_issue\"", key, sep, sep, sep)
		return false
	}
	srv := key[:i]
	t.errf(key, "names server %q, which this registry does not have%s", srv, didYouMean(srv, k.names, "its servers are", "it has no servers"))
	return false
}

// override reads one override table; nil when it sets nothing.
func (p *parser) override(at []string, raw any) *ToolOverride {
	t := &table{p: p, path: at}
	m, ok := raw.(map[string]any)
	if !ok {
		t.at(nil, "an override must be a table; write [%s] followed by name, title, description, annotations or args", toml.Key(at))
		return nil
	}
	t.m = m
	before := len(p.errs)
	t.unknown(overrideKeys, overrideAliases)
	o := &ToolOverride{}
	if t.str("name", &o.Name) && !validToolName(o.Name) {
		t.errf("name", "%q is not a tool name clients accept; use 1-64 characters of A-Z, a-z, 0-9, '_', '.' and '-'", o.Name)
		o.Name = ""
	}
	t.str("title", &o.Title)
	t.str("description", &o.Description)
	o.Annotations = annotations(t)
	o.Args = args(t)
	if o.Name == "" && o.Title == "" && o.Description == "" && len(o.Annotations)+len(o.Args) == 0 {
		if len(p.errs) == before {
			t.at(nil, "sets nothing; give name, title, description, annotations or args")
		}
		return nil
	}
	return o
}

func annotations(t *table) map[string]json.RawMessage {
	v, ok := t.m["annotations"]
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.errf("annotations", "must be a table, like annotations = { readOnlyHint = true }, not %s", typeName(v))
		return nil
	}
	sub := &table{p: t.p, m: m, path: append(slices.Clone(t.path), "annotations")}
	sub.unknown(annotationKeys, annotationAliases)
	out := map[string]json.RawMessage{}
	for _, key := range annotationKeys {
		var val any
		if key == "title" {
			var s string
			if !sub.str(key, &s) {
				continue
			}
			val = s
		} else {
			var b bool
			if !sub.boolean(key, &b) {
				continue
			}
			val = b
		}
		if raw, err := marshalJSON(val); err == nil {
			out[key] = raw
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func args(t *table) map[string]json.RawMessage {
	v, ok := t.m["args"]
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.errf("args", "must be a table of argument values, like args = { owner = \"acme\" }, not %s", typeName(v))
		return nil
	}
	out := map[string]json.RawMessage{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		at := []string{"args", name}
		if name == "" {
			t.at(at, "an argument name must not be empty")
			continue
		}
		if sub, msg := jsonable(m[name]); msg != "" {
			t.at(append(at, sub...), "%s", msg)
			continue
		}
		raw, err := marshalJSON(m[name])
		if err != nil {
			t.at(at, "cannot be written as JSON: %v", err)
			continue
		}
		out[name] = raw
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// jsonable finds a part of a decoded TOML value that JSON cannot hold, and
// returns its key path below the value (inside inline tables) and what to
// write instead; "" when there is none.
func jsonable(v any) ([]string, string) {
	switch x := v.(type) {
	case time.Time:
		return nil, `is a TOML date or time, which JSON has no type for; quote it as a string, e.g. "2025-01-02T15:04:05Z"`
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, "nan and inf have no JSON form; use a number or a string"
		}
	case []any:
		for _, e := range x {
			if _, msg := jsonable(e); msg != "" {
				return nil, msg
			}
		}
	case []map[string]any:
		for _, e := range x {
			if _, msg := jsonable(e); msg != "" {
				return nil, msg
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if sub, msg := jsonable(x[k]); msg != "" {
				return append([]string{k}, sub...), msg
			}
		}
	}
	return nil, ""
}

// marshalJSON writes v as compact JSON, without escaping <, > and &.
func marshalJSON(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n")), nil
}

// didYouMean ends a message about an unknown name: the close one, or the
// known ones when they are few.
func didYouMean(name string, names []string, these, none string) string {
	if s := suggest(name, names, nil); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	switch {
	case len(names) == 0:
		return "; " + none
	case len(names) <= 10:
		return "; " + these + " " + nameList(names)
	}
	return ""
}

// nameList quotes names, comma-separated, up to ten of them.
func nameList(names []string) string {
	q := make([]string, 0, min(len(names), 10))
	for _, n := range names[:min(len(names), 10)] {
		q = append(q, fmt.Sprintf("%q", n))
	}
	s := strings.Join(q, ", ")
	if len(names) > 10 {
		s += fmt.Sprintf(" and %d more", len(names)-10)
	}
	return s
}
