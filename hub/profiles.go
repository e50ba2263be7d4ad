package hub

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
)

// A session's endpoint is "" for /mcp, a server's name for /{server}/mcp,
// and profileEndpointPrefix and the profile's name for /profiles/NAME/mcp.
// Server names cannot hold a '/', so the three never meet.
const profileEndpointPrefix = "profiles/"

// profileEndpoint is the endpoint of the profile called name.
func profileEndpoint(name string) string { return profileEndpointPrefix + name }

// endpointProfile returns the profile a profile endpoint serves.
func endpointProfile(endpoint string) (string, bool) {
	return strings.CutPrefix(endpoint, profileEndpointPrefix)
}

// serverEndpoint reports whether endpoint is one server's own
// /{server}/mcp, which passes that server through with its own names (and
// answers errors with HTTP statuses, seed 002).
func serverEndpoint(endpoint string) bool {
	return endpoint != "" && !strings.HasPrefix(endpoint, profileEndpointPrefix)
}

// shaping is how a view shows one server's lists: under which prefix, which
// of its tools a profile keeps, and which overrides apply. The zero value
// (with sep) is a server's own view, names and items as offered.
type shaping struct {
	prefix, sep string
	// reg, when set, supplies overrides (global, and the profile's).
	reg *registry.Registry
	// profile, when set, filters the tools by its globs.
	profile *registry.Profile
}

// fixedArg is an argument value an override fixes: removed from the
// schema clients see, set on every call.
type fixedArg struct {
	name  string
	value json.RawMessage
}

// shapeTool applies the view's profile filter and overrides to one tool of
// server spec: whether the view shows it, the name to expose (before it is
// made safe), the item as the view shows it, and the arguments it fixes.
// Everything not overridden keeps its bytes.
func (sh *shaping) shapeTool(spec *registry.Server, orig string, item json.RawMessage) (show bool, want string, out json.RawMessage, fixed []fixedArg) {
	want = orig
	if sh.prefix != "" {
		want = sh.prefix + sh.sep + orig
	}
	if sh.reg == nil {
		return true, want, item, nil
	}
	q := spec.Name + sh.sep + orig
	if sh.profile != nil && !sh.profile.AllowsTool(q) {
		return false, "", nil, nil
	}
	ov := sh.reg.ToolOverride(sh.profile, q)
	if ov == nil {
		return true, want, item, nil
	}
	if ov.Name != "" {
		want = ov.Name
	}
	out, fixed = applyOverride(item, ov)
	return true, want, out, fixed
}

// applyOverride lays an override over a tool's item. A member the item
// does not have as an object (annotations, the schema's properties) is
// created or left alone; an item that is not an object is left as it is.
func applyOverride(item json.RawMessage, ov *registry.ToolOverride) (json.RawMessage, []fixedArg) {
	set := func(obj json.RawMessage, key string, v json.RawMessage) json.RawMessage {
		if out, err := jsonrpc.SetMember(obj, key, v); err == nil {
			return out
		}
		return obj
	}
	if ov.Title != "" {
		item = set(item, "title", jsonrpc.Quote(ov.Title))
	}
	if ov.Description != "" {
		item = set(item, "description", jsonrpc.Quote(ov.Description))
	}
	if len(ov.Annotations) > 0 {
		ann, ok := jsonrpc.Member(item, "annotations")
		if !ok || !isObject(ann) {
			ann = json.RawMessage(`{}`)
		}
		for _, k := range slices.Sorted(maps.Keys(ov.Annotations)) {
			ann = set(ann, k, ov.Annotations[k])
		}
		item = set(item, "annotations", ann)
	}
	if len(ov.Args) == 0 {
		return item, nil
	}
	fixed := make([]fixedArg, 0, len(ov.Args))
	for _, k := range slices.Sorted(maps.Keys(ov.Args)) {
		fixed = append(fixed, fixedArg{name: k, value: ov.Args[k]})
	}
	if schema, ok := jsonrpc.Member(item, "inputSchema"); ok && isObject(schema) {
		item = set(item, "inputSchema", hideArgs(schema, fixed))
	}
	return item, fixed
}

// hideArgs removes fixed arguments from an input schema: from properties
// and from required.
func hideArgs(schema json.RawMessage, fixed []fixedArg) json.RawMessage {
	if props, ok := jsonrpc.Member(schema, "properties"); ok && isObject(props) {
		for _, f := range fixed {
			if out, err := jsonrpc.DeleteMember(props, f.name); err == nil {
				props = out
			}
		}
		if out, err := jsonrpc.SetMember(schema, "properties", props); err == nil {
			schema = out
		}
	}
	if req, ok := jsonrpc.Member(schema, "required"); ok {
		var names []json.RawMessage
		if json.Unmarshal(req, &names) == nil {
			kept := slices.DeleteFunc(slices.Clone(names), func(n json.RawMessage) bool {
				s, _ := jsonrpc.String(n)
				return slices.ContainsFunc(fixed, func(f fixedArg) bool { return f.name == s })
			})
			if len(kept) == len(names) {
				return schema
			}
			if s, err := jsonrpc.SetMember(schema, "required", jsonrpc.AppendArray(nil, kept)); err == nil {
				schema = s
			}
		}
	}
	return schema
}

// fillArgs sets a call's fixed arguments in its params, over whatever the
// client sent for them; the other arguments keep their bytes.
func fillArgs(params json.RawMessage, fixed []fixedArg) (json.RawMessage, error) {
	args, ok := jsonrpc.Member(params, "arguments")
	if !ok || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if !isObject(args) {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params.arguments must be an object")
	}
	for _, f := range fixed {
		// Every member the server could take for this argument goes
		// first: a repeated key, or the name in another case, which
		// decoders that fold case (Go's encoding/json) would read last.
		for {
			var dup []byte
			jsonrpc.Members(args, func(k []byte, _ json.RawMessage) {
				if strings.EqualFold(string(k), f.name) {
					dup = append(dup[:0], k...)
				}
			})
			if dup == nil {
				break
			}
			var err error
			if args, err = jsonrpc.DeleteMember(args, string(dup)); err != nil {
				return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params.arguments must be an object")
			}
		}
		var err error
		if args, err = jsonrpc.SetMember(args, f.name, f.value); err != nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params.arguments must be an object")
		}
	}
	out, err := jsonrpc.SetMember(params, "arguments", args)
	if err != nil {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "params must be an object")
	}
	return out, nil
}

// isObject reports whether raw JSON is an object.
func isObject(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}

// profileServers returns the enabled servers of entries (in their order)
// that profile p selects.
func profileServers(p *registry.Profile, entries []*serverEntry) []*serverEntry {
	var out []*serverEntry
	for _, e := range entries {
		if p.SelectsServer(e.spec) {
			out = append(out, e)
		}
	}
	return out
}

// serveCatalog is the control endpoint behind `mcphub tokens` and `mcphub
// tools ls --profile`: GET /control/catalog[?profile=NAME] answers the
// view's tools as clients see them (listed: tools/list, the search tools in
// search mode) and every tool it serves with the server and name it has
// upstream, as api.Catalog: written by hand, so that every item goes out
// byte for byte as the catalog holds it.
func (e *edge) serveCatalog(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		httpError(w, http.StatusMethodNotAllowed, "use GET /control/catalog?profile=NAME")
		return
	}
	endpoint, mode := "", registry.ModeFull
	if name := r.URL.Query().Get("profile"); name != "" {
		prof := e.servers.registry().Profile(name)
		if prof == nil {
			httpError(w, http.StatusNotFound, fmt.Sprintf("the registry has no profile %q", logValue(name)))
			return
		}
		endpoint, mode = profileEndpoint(name), prof.Mode
	}
	if !e.servers.warmed(r.Context()) {
		return
	}
	view := e.servers.view(endpoint)
	if view == nil {
		httpError(w, http.StatusServiceUnavailable, "the profile's view is not built yet; try again")
		return
	}
	out := fmt.Appendf(nil, `{"endpoint":%s,"mode":%s,"listed":`, jsonrpc.Quote(endpointName(endpoint)), jsonrpc.Quote(mode))
	out = jsonrpc.AppendArray(out, view.items["tools/list"])
	out = append(out, `,"tools":[`...)
	for i, t := range view.tools {
		if i > 0 {
			out = append(out, ',')
		}
		out = fmt.Appendf(out, `{"server":%s,"tool":%s,"item":%s}`, jsonrpc.Quote(t.server), jsonrpc.Quote(t.name), t.item)
	}
	out = append(out, "]}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}
