package jsonrpc

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
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

// SetModernHeaders sets the headers a 2026-07-28 request carries over
// Streamable HTTP: MCP-Protocol-Version as its _meta names it, Mcp-Method,
// and Mcp-Name for tools/call and prompts/get (params.name) and
// resources/read (params.uri), base64-wrapped where a header cannot carry
// it.
func SetModernHeaders(h http.Header, m *Message) {
	if v, ok := MetaMember(m.Params, MetaProtocolVersion); ok {
		if s, ok := String(v); ok {
			h.Set("MCP-Protocol-Version", s)
		}
	}
	h.Set("Mcp-Method", m.Method)
	member := ""
	switch m.Method {
	case "tools/call", "prompts/get":
		member = "name"
	case "resources/read":
		member = "uri"
	}
	if member != "" {
		if name, ok := StringMember(m.Params, member); ok {
			h.Set("Mcp-Name", EncodeHeaderValue(name))
		}
	}
}

// SetParamHeaders sets the Mcp-Param-* headers of a tools/call whose tool
// has the annotations hs: each annotated argument that is present and not
// null, a string as it is (base64 where a header cannot carry it), an
// integer in decimal, a boolean as true or false; other values are not
// mirrored.
func SetParamHeaders(h http.Header, hs []ParamHeader, args json.RawMessage) {
	for _, p := range hs {
		v, ok := p.Arg(args)
		if !ok || len(v) == 0 {
			continue
		}
		var val string
		switch {
		case string(v) == "true" || string(v) == "false":
			val = string(v)
		case v[0] == '"':
			s, _ := String(v)
			val = EncodeHeaderValue(s)
		case wholeNumber(v) != "":
			val = wholeNumber(v)
		default:
			continue // null, a fraction, an object: nothing a header carries
		}
		h.Set("Mcp-Param-"+p.Header, val)
	}
}

// wholeNumber is a JSON number that is a whole number (42, 42.0, 4.2e1)
// in decimal, "" for anything else.
func wholeNumber(v json.RawMessage) string {
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return ""
	}
	return strconv.FormatInt(int64(f), 10)
}
