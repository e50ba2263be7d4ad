package registry

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path"
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

// tags reads a server's tags.
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
		}
	}
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
		k.allTags = append(k.allTags, s.Tags...)
	}
	k.names = slices.Sorted(maps.Keys(k.enabled))
	slices.Sort(k.allTags)
	k.allTags = slices.Compact(k.allTags)
	return k
}

func (k *known) has(name string) bool { _, ok := k.enabled[name]; return ok }

// selected lists the enabled servers profile pr takes, by name.
func (k *known) selected(pr *Profile) []string {
	var out []string
	for _, n := range k.names {
		if k.enabled[n] && pr.SelectsServer(&Server{Name: n, Tags: k.tags[n]}) {
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
	reg.Overrides = p.overrides([]string{"overrides"}, "", raw["overrides"], k, sep)
	reg.Profiles = p.profiles(raw["profiles"], k, sep)
}

func (p *parser) profiles(raw any, k *known, sep string) []*Profile {
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
		out = append(out, p.profile(name, m[name], k, sep))
	}
	return out
}

// profile reads one [profiles.NAME] table. It always returns the profile,
// with what could be read: ParseServing keeps it, with its problems.
func (p *parser) profile(name string, raw any, k *known, sep string) *Profile {
	path := []string{"profiles", name}
	pr := &Profile{Name: name, Prefixed: true, Mode: ModeFull}
	pr.Line, _ = p.lay.pos(path)
	t := &table{p: p, path: path, profile: name}
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
	if t.loose("servers", &pr.Servers) {
		for i, n := range pr.Servers {
			if !k.has(n) {
				t.errf("servers", "entry %d (%q) is not a server of this registry%s", i+1, n, didYouMean(n, k.names, "its servers are", "it has no servers"))
			}
		}
	}
	if t.loose("tags", &pr.Tags) && !p.tagsUnsure {
		for i, tag := range pr.Tags {
			if !slices.Contains(k.allTags, tag) {
				t.errf("tags", "entry %d (%q) is not a tag of any server%s", i+1, tag, didYouMean(tag, k.allTags, "the servers' tags are", "no server has tags"))
			}
		}
	}
	if t.loose("include", &pr.Include) {
		for _, g := range pr.Include {
			if msg := checkGlob(g); msg != "" {
				t.errf("include", "%s", msg)
			}
		}
	}
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
	pr.Overrides = p.overrides(append(slices.Clone(path), "overrides"), name, m["overrides"], k, sep)
	p.checkSelection(t, pr, k, sep)
	return pr
}

// loose reads a list of strings as strs does, but keeps what it can of a
// wrong value (a lone string as a list of one, the strings of a mixed
// array): a profile with a problem is still served, and one whose servers
// or include went missing would select more, not less.
func (t *table) loose(key string, dst *[]string) bool {
	if t.strs(key, dst) {
		return true
	}
	switch v := t.m[key].(type) {
	case string:
		*dst = []string{v}
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				*dst = append(*dst, s)
			}
		}
	}
	return false
}

// checkSelection reports a profile that selects no enabled server, and an
// include glob whose server part matches none of those it selects.
func (p *parser) checkSelection(t *table, pr *Profile, k *known, sep string) {
	if p.tagsUnsure && len(pr.Tags) > 0 {
		return // a server's tags did not parse; its error says so
	}
	sel := k.selected(pr)
	if len(sel) == 0 {
		t.at(nil, "%s", nothingSelected(pr, k))
		return
	}
	if sep == "" {
		return
	}
	for _, g := range pr.Include {
		if strings.Contains(g, sep) && checkGlob(g) == "" && !globTakesServer(g, sep, sel) {
			t.errf("include", "%q matches no server of this profile: the text before %q is matched against the names of its enabled servers (%s)", g, sep, nameList(sel))
		}
	}
}

// globTakesServer reports whether the server part of a glob on qualified
// names (the text before a separator) matches one of servers. A part that
// is not a pattern of its own counts as matching: the glob is valid.
func globTakesServer(g, sep string, servers []string) bool {
	for i := 0; i < len(g); i++ {
		j := strings.Index(g[i:], sep)
		if j < 0 {
			break
		}
		i += j
		for _, s := range servers {
			if ok, err := path.Match(g[:i], s); ok || err != nil {
				return true
			}
		}
	}
	return false
}

func nothingSelected(pr *Profile, k *known) string {
	if len(pr.Servers)+len(pr.Tags) == 0 {
		return "selects no server: with neither servers nor tags it takes every enabled server, and none is enabled; enable a server or remove the profile"
	}
	var disabled []string
	for _, n := range k.names {
		if pr.SelectsServer(&Server{Name: n, Tags: k.tags[n]}) {
			disabled = append(disabled, n)
		}
	}
	if len(disabled) > 0 {
		verb := "are"
		if len(disabled) == 1 {
			verb = "is"
		}
		return fmt.Sprintf("selects no enabled server: its servers and tags choose only %s, which %s disabled; enable one, or choose others with servers or tags",
			nameList(disabled), verb)
	}
	return "selects no server: no server of this registry is in its servers or has one of its tags"
}

// overrides reads a table of tool overrides by qualified name: [overrides]
// or a profile's overrides.
func (p *parser) overrides(at []string, profile string, raw any, k *known, sep string) map[string]*ToolOverride {
	if raw == nil {
		return nil
	}
	t := &table{p: p, path: at, profile: profile}
	m, ok := raw.(map[string]any)
	if !ok {
		t.at(nil, `must be a table of tool overrides; write [%s."SERVER%sTOOL"] tables, one per tool`, toml.Key(at), cmp.Or(sep, DefaultSeparator))
		return nil
	}
	t.m = m
	out := map[string]*ToolOverride{}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		keyOK := p.checkQualified(t, key, k, sep)
		if o := p.override(append(slices.Clone(at), key), profile, m[key]); o != nil && keyOK {
			out[key] = o
		}
	}
	// The same name given twice is reported at the later one.
	type named struct {
		key       string
		line, col int
	}
	var ns []named
	for key, o := range out {
		if o.Name != "" {
			ln, col := p.lay.pos(append(slices.Clone(at), key, "name"))
			ns = append(ns, named{key, ln, col})
		}
	}
	slices.SortFunc(ns, func(a, b named) int {
		return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.col, b.col), strings.Compare(a.key, b.key))
	})
	first := map[string]named{}
	for _, n := range ns {
		name := out[n.key].Name
		if f, dup := first[name]; dup {
			t.at([]string{n.key, "name"}, "%q is also the name of %s (line %d); two tools of one view cannot share a name", name, toml.Key(append(slices.Clone(at), f.key)), f.line)
			continue
		}
		first[name] = n
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
func (p *parser) override(at []string, profile string, raw any) *ToolOverride {
	t := &table{p: p, path: at, profile: profile}
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
	sub := &table{p: t.p, m: m, path: append(slices.Clone(t.path), "annotations"), profile: t.profile}
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
