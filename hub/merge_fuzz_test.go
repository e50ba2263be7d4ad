package hub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
)

// referenceCatalog is the whole-catalog builder the pieces replaced, kept
// as the definition of what a view holds: every server's lists read and
// merged in one pass, first name wins.
func referenceCatalog(sources []source, prefixed bool, sep string) *catalog {
	c := &catalog{toolIndex: map[string]int{}, promptIndex: map[string]int{}, resourceIndex: map[string]string{},
		items: map[string][]json.RawMessage{}, conflicts: map[string][]string{}}
	conflict := func(server, format string, args ...any) {
		c.conflicts[server] = append(c.conflicts[server], fmt.Sprintf(format, args...))
	}
	add := func(list []named, index map[string]int, kind, server, prefix, orig string, item json.RawMessage) []named {
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
	for _, src := range sources {
		name, prefix := src.spec.Name, ""
		if prefixed {
			prefix = src.spec.Prefix
		}
		for _, item := range src.up.List("tools/list") {
			if orig, ok := jsonrpc.StringMember(item, "name"); ok && src.spec.AllowsTool(orig) {
				c.tools = add(c.tools, c.toolIndex, "tool", name, prefix, orig, item)
			}
		}
		for _, item := range src.up.List("prompts/list") {
			if orig, ok := jsonrpc.StringMember(item, "name"); ok {
				c.prompts = add(c.prompts, c.promptIndex, "prompt", name, prefix, orig, item)
			}
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
	for i, list := range [][]named{c.tools, c.prompts, c.resources} {
		for _, n := range list {
			c.items[listKinds[i].method] = append(c.items[listKinds[i].method], n.item)
		}
	}
	for _, t := range c.templates {
		c.items["resources/templates/list"] = append(c.items["resources/templates/list"], t.item)
	}
	return c
}

// fuzzSources turns fuzz input into servers whose names, prefixes, filters
// and items come from small vocabularies, so that collisions, renames,
// filtered tools, items without names and bad templates are common.
func fuzzSources(data []byte) (sources []source, sep string) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	names := []string{"a", "b", "a.b", "x y", "", strings.Repeat("n", 70), "é", "a-b_c", "delete_all"}
	prefixes := []string{"", "p", "q", "p__a", "bad prefix"}
	uris := []string{"x://1", "x://2", "file:///a"}
	templates := []string{"x://{id}", "x://{", "x://{}", "y://{+path}", "z://{?q}"}
	list := func(key string, vocab []string) []json.RawMessage {
		var out []json.RawMessage
		for range next() % 5 {
			switch v := next(); {
			case v%9 == 0:
				out = append(out, json.RawMessage(`{"other":1}`))
			case v%9 == 1:
				out = append(out, json.RawMessage(`[1]`))
			default:
				out = append(out, json.RawMessage(fmt.Sprintf(`{%q:%q,"d":%d}`, key, vocab[v%len(vocab)], next()%3)))
			}
		}
		return out
	}
	sep = []string{"__", ".", "-"}[next()%3]
	for i := range 1 + next()%4 {
		spec := &registry.Server{Name: fmt.Sprintf("s%d", i), Prefix: prefixes[next()%len(prefixes)], Enabled: true}
		switch next() % 4 {
		case 1:
			spec.Deny = []string{"delete_*"}
		case 2:
			spec.Allow = []string{"a*"}
		}
		up := newFake(spec.Name).
			setList("tools/list", list("name", names)).setList("prompts/list", list("name", names)).
			setList("resources/list", list("uri", uris)).setList("resources/templates/list", list("uriTemplate", templates))
		sources = append(sources, source{spec: spec, up: up})
	}
	return sources, sep
}

// sameCatalog reports how two catalogs differ in what clients see and how
// calls are routed; "" when they do not. Digests are compared elsewhere.
func sameCatalog(got, want *catalog) string {
	pats := func(ts []template) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.server+" "+t.pattern.String()+" "+string(t.item))
		}
		return out
	}
	itemsOf := func(c *catalog, m string) []string {
		var out []string
		for _, it := range c.items[m] {
			out = append(out, string(it))
		}
		return out
	}
	for _, k := range listKinds {
		if g, w := itemsOf(got, k.method), itemsOf(want, k.method); !slices.Equal(g, w) {
			return fmt.Sprintf("%s items %q, want %q", k.method, g, w)
		}
	}
	switch {
	case !reflect.DeepEqual(got.tools, want.tools) && len(got.tools)+len(want.tools) > 0:
		return fmt.Sprintf("tools %v, want %v", got.tools, want.tools)
	case !reflect.DeepEqual(got.prompts, want.prompts) && len(got.prompts)+len(want.prompts) > 0:
		return fmt.Sprintf("prompts %v, want %v", got.prompts, want.prompts)
	case !reflect.DeepEqual(got.resources, want.resources) && len(got.resources)+len(want.resources) > 0:
		return fmt.Sprintf("resources %v, want %v", got.resources, want.resources)
	case !reflect.DeepEqual(got.toolIndex, want.toolIndex):
		return fmt.Sprintf("tool index %v, want %v", got.toolIndex, want.toolIndex)
	case !reflect.DeepEqual(got.promptIndex, want.promptIndex):
		return fmt.Sprintf("prompt index %v, want %v", got.promptIndex, want.promptIndex)
	case !reflect.DeepEqual(got.resourceIndex, want.resourceIndex):
		return fmt.Sprintf("resource index %v, want %v", got.resourceIndex, want.resourceIndex)
	case !slices.Equal(pats(got.templates), pats(want.templates)):
		return fmt.Sprintf("templates %q, want %q", pats(got.templates), pats(want.templates))
	case !reflect.DeepEqual(got.conflicts, want.conflicts):
		return fmt.Sprintf("conflicts %q, want %q", got.conflicts, want.conflicts)
	}
	return ""
}

// FuzzCatalogMerge builds views from pieces and from the reference builder
// and requires the same names, items, routes and conflicts, in the same
// order, for the merged (prefixed) view and a server's own; and requires a
// list's digest to change exactly when its items do.
func FuzzCatalogMerge(f *testing.F) {
	for _, seed := range []string{
		"", "\x00\x03\x04\x02\x05\x07\x08\x09\x01\x02\x03\x04\x05\x06\x07",
		"\x01\x03\x00\x00\x04\x02\x02\x03\x03\x04\x04\x05\x00\x02\x02\x02\x02\x01\x03\x07\x01\x01\x02\x02",
		"\x02\x02\x01\x01\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15",
		"\x00\x03\x02\x00\x04\x02\x02\x02\x02\x02\x02\x02\x02\x04\x01\x00\x04\x03\x03\x03\x03\x03\x03\x03\x03",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sources, sep := fuzzSources(data)
		got, want := buildCatalog(sources, true, sep), referenceCatalog(sources, true, sep)
		if diff := sameCatalog(got, want); diff != "" {
			t.Fatalf("merged view: %s", diff)
		}
		own, ownWant := buildCatalog(sources[:1], false, sep), referenceCatalog(sources[:1], false, sep)
		if diff := sameCatalog(own, ownWant); diff != "" {
			t.Fatalf("own view: %s", diff)
		}
		// The digests of two views differ exactly where their items do.
		for _, k := range listKinds {
			sameItems := slices.EqualFunc(got.items[k.method], own.items[k.method], func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })
			if sameDigest := got.digest[k.method] == own.digest[k.method]; sameDigest != sameItems {
				t.Fatalf("%s: equal digests %v, equal items %v", k.method, sameDigest, sameItems)
			}
		}
	})
}
