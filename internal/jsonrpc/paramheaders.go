package jsonrpc

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
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

// ParamHeaders returns the x-mcp-header annotations of a tool (one item of
// a tools/list result), of every property its inputSchema reaches through
// properties keys, in the order the schema lists them. Keys are matched
// exactly, as JSON Schema does. It fails, naming the property, for an
// annotation a client must not honour, and a client leaves such a tool out
// of tools/list: a name that is not a non-empty HTTP token, a property
// whose type is not string, integer or boolean, or a name another property
// has already taken, in any case. tool must be valid JSON.
func ParamHeaders(tool json.RawMessage) ([]ParamHeader, error) {
	if !bytes.Contains(tool, []byte("x-mcp-header")) && !bytes.Contains(tool, []byte(`\u`)) {
		return nil, nil // no such key, not even escaped
	}
	schema, _ := Member(tool, "inputSchema")
	var out []ParamHeader
	var err error
	seen := map[string][]string{} // lower-cased name → the path that took it
	var walk func(schema json.RawMessage, prefix []string)
	walk = func(schema json.RawMessage, prefix []string) {
		props, _ := Member(schema, "properties")
		Members(props, func(k []byte, p json.RawMessage) {
			if err != nil {
				return
			}
			path := append(prefix[:len(prefix):len(prefix)], string(k))
			if h, ok := Member(p, "x-mcp-header"); ok {
				name, isString := String(h)
				typ, _ := StringMember(p, "type")
				other, taken := seen[strings.ToLower(name)]
				switch {
				case !isString:
					err = fmt.Errorf("property %s: x-mcp-header is not a string", strings.Join(path, "."))
				case !httphdr.ValidName(name):
					err = fmt.Errorf("property %s: x-mcp-header %q is not an HTTP header name", strings.Join(path, "."), name)
				case typ != "string" && typ != "integer" && typ != "boolean":
					t, _ := Member(p, "type")
					err = fmt.Errorf("property %s: x-mcp-header on a property of type %s; only string, integer and boolean can be", strings.Join(path, "."), cmp.Or(string(t), "(none)"))
				case taken:
					err = fmt.Errorf("property %s: x-mcp-header %q is taken by property %s", strings.Join(path, "."), name, strings.Join(other, "."))
				default:
					seen[strings.ToLower(name)] = path
					out = append(out, ParamHeader{Path: path, Header: name})
				}
				if err != nil {
					return
				}
			}
			walk(p, path)
		})
	}
	walk(schema, nil)
	if err != nil {
		return nil, err
	}
	return out, nil
}
