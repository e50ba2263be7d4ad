package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mcphub/mcphub/internal/httphdr"
)

// ParamHeader is a tool argument a 2026-07-28 client mirrors in an
// Mcp-Param-{Header} header (SEP-2243). Path leads from the call's
// arguments to it, through nested objects.
type ParamHeader struct {
	Path   []string
	Header string
}

// Arg returns the argument p stands for in a call's arguments, false when
// it is absent.
func (p ParamHeader) Arg(args json.RawMessage) (json.RawMessage, bool) {
	if len(p.Path) == 0 {
		return nil, false
	}
	v := args
	for _, k := range p.Path {
		var ok bool
		if v, ok = Member(v, k); !ok {
			return nil, false
		}
	}
	return v, true
}

// headerSchema is what ParamHeaders reads of an inputSchema and of each of
// its properties.
type headerSchema struct {
	Type       json.RawMessage         `json:"type"`
	Header     json.RawMessage         `json:"x-mcp-header"`
	Properties map[string]headerSchema `json:"properties"`
}

// ParamHeaders returns the x-mcp-header annotations of a tool (one item of
// a tools/list result), of every property its inputSchema reaches through
// properties keys, ordered by path. It fails, naming the property, for an
// annotation a client must not honour, and a client leaves such a tool out
// of tools/list: a name that is not a non-empty HTTP token, a property
// whose type is not string, integer or boolean, or a name another property
// has already taken, in any case. A tool it cannot read has none.
func ParamHeaders(tool json.RawMessage) ([]ParamHeader, error) {
	if !bytes.Contains(tool, []byte("x-mcp-header")) {
		return nil, nil
	}
	var t struct {
		InputSchema headerSchema `json:"inputSchema"`
	}
	if json.Unmarshal(tool, &t) != nil {
		return nil, nil
	}
	var out []ParamHeader
	seen := map[string]string{} // lower-cased name → the path that took it
	var walk func(props map[string]headerSchema, prefix []string) error
	walk = func(props map[string]headerSchema, prefix []string) error {
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			p := props[k]
			path := append(append([]string(nil), prefix...), k)
			where := strings.Join(path, ".")
			if p.Header != nil {
				name, ok := String(p.Header)
				switch typ, _ := String(p.Type); {
				case !ok || !httphdr.ValidName(name):
					return fmt.Errorf("property %s: x-mcp-header %s is not an HTTP header name", where, p.Header)
				case typ != "string" && typ != "integer" && typ != "boolean":
					return fmt.Errorf("property %s: x-mcp-header on a property of type %s; only string, integer and boolean can be", where, cmpOr(p.Type, "(none)"))
				}
				if other, taken := seen[strings.ToLower(name)]; taken {
					return fmt.Errorf("property %s: x-mcp-header %q is taken by property %s", where, name, other)
				}
				seen[strings.ToLower(name)] = where
				out = append(out, ParamHeader{Path: path, Header: name})
			}
			if err := walk(p.Properties, path); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(t.InputSchema.Properties, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// cmpOr is raw as text, or def when raw is empty.
func cmpOr(raw json.RawMessage, def string) string {
	if len(raw) == 0 {
		return def
	}
	return string(raw)
}
