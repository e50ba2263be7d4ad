package hubclient

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"
)

// ToolArguments are the arguments of a tools/call: argsJSON, one JSON
// object (--args), with the key=value pairs added, each value read as
// schema, the tool's input schema, types its key; nil when there are
// neither. A string argument takes the value exactly as typed; a number,
// integer, boolean, object or array argument takes it as JSON, and a value
// that is not one is refused with a sentence, unless it is in JSON quotes;
// an undeclared argument is taken as JSON when it is a JSON value, as a
// string otherwise. A nil schema checks the pairs' form only.
func ToolArguments(argsJSON string, pairs []string, schema json.RawMessage) (json.RawMessage, error) {
	kv, err := keyValues(pairs)
	if err != nil {
		return nil, err
	}
	obj := map[string]json.RawMessage{}
	if t := strings.TrimSpace(argsJSON); t != "" {
		if t[0] != '{' || json.Unmarshal([]byte(t), &obj) != nil {
			return nil, fmt.Errorf(`--args must be one JSON object, such as --args '{"path": "/tmp"}'`)
		}
		if len(kv) == 0 {
			return json.RawMessage(t), nil
		}
	} else if len(kv) == 0 {
		return nil, nil
	}
	types := schemaTypes(schema)
	for _, p := range kv {
		v, err := argumentValue(p.key, p.value, types[p.key])
		if err != nil {
			return nil, err
		}
		obj[p.key] = v
	}
	return json.Marshal(obj)
}

// PromptArguments are the arguments of a prompts/get from key=value pairs:
// MCP prompt arguments are strings, so every value is sent exactly as
// typed. A pair without "=" or a key given twice is refused.
func PromptArguments(pairs []string) (map[string]string, error) {
	kv, err := keyValues(pairs)
	if err != nil {
		return nil, err
	}
	arguments := make(map[string]string, len(kv))
	for _, p := range kv {
		arguments[p.key] = p.value
	}
	return arguments, nil
}

// keyValue is one key=value argument.
type keyValue struct {
	key, value string
}

// keyValues splits key=value arguments, the value taken as it is; a key
// given twice is refused.
func keyValues(args []string) ([]keyValue, error) {
	out := make([]keyValue, 0, len(args))
	seen := make(map[string]bool, len(args))
	for _, arg := range args {
		k, v, ok := strings.Cut(arg, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q is not key=value; pass arguments as key=value pairs, such as path=/tmp", arg)
		}
		if seen[k] {
			return nil, fmt.Errorf("argument %s is given twice; give each argument once", k)
		}
		seen[k] = true
		out = append(out, keyValue{k, v})
	}
	return out, nil
}

// jsonKind is the type of one JSON value as JSON Schema names it: "string",
// "number" (integer or not), "boolean", "object", "array" or "null".
func jsonKind(v string) string {
	switch t := strings.TrimSpace(v); t[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// isInteger reports whether a JSON number has no fractional part, as JSON
// Schema's "integer" wants (3, 3.0 and 3e2 are integers).
func isInteger(num string) bool {
	f, _, err := big.ParseFloat(strings.TrimSpace(num), 10, 256, big.ToNearestEven)
	return err == nil && f.IsInt()
}

// schemaTypes are the JSON Schema types an input schema declares for each
// property; a property declared without a type is left out. A schema that
// does not parse declares none.
func schemaTypes(schema json.RawMessage) map[string][]string {
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	out := make(map[string][]string, len(s.Properties))
	for name, p := range s.Properties {
		var one string
		var many []string
		switch {
		case json.Unmarshal(p.Type, &one) == nil && one != "":
			out[name] = []string{one}
		case json.Unmarshal(p.Type, &many) == nil && len(many) > 0:
			out[name] = many
		}
	}
	return out
}

// argumentValue is the JSON value a key=value argument sends. types are the
// types the tool's input schema declares for key (none: not declared):
//   - a string-only argument takes the value as it is;
//   - any other declared type takes it as JSON of that type, and a value
//     that is not is refused with a sentence; a JSON string literal,
//     though, sends that string, for the server to judge;
//   - a string argument that may also be another type takes the value as
//     JSON when it is one of those types, as it is otherwise;
//   - an undeclared argument takes the value as JSON when it is a JSON
//     value, as it is otherwise.
func argumentValue(key, value string, types []string) (json.RawMessage, error) {
	isJSON := strings.TrimSpace(value) != "" && json.Valid([]byte(value))
	kind := ""
	if isJSON {
		kind = jsonKind(value)
	}
	fits := func(t string) bool {
		switch {
		case t == kind:
			return true
		case t == "integer":
			return kind == "number" && isInteger(value)
		}
		return false
	}
	verbatim := func() (json.RawMessage, error) { return json.Marshal(value) }
	asSent := func() (json.RawMessage, error) { return json.RawMessage(strings.TrimSpace(value)), nil }
	others := slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "string" })
	switch {
	case len(types) == 0:
		if isJSON {
			return asSent()
		}
		return verbatim()
	case len(others) < len(types): // "string" is one of them
		if isJSON && slices.ContainsFunc(others, fits) {
			return asSent()
		}
		return verbatim()
	case kind == "string" || slices.ContainsFunc(types, fits):
		return asSent()
	}
	wants := make([]string, len(types))
	for i, t := range types {
		wants[i] = typeWording(t)
	}
	got := value
	if utf8.RuneCountInString(got) > 60 {
		got = string([]rune(got)[:59]) + "…"
	}
	if got == "" {
		got = "nothing"
	}
	return nil, fmt.Errorf("%s must be %s, got %s", key, strings.Join(wants, " or "), got)
}

// typeWording is a JSON Schema type as a sentence says what a value must be.
func typeWording(t string) string {
	switch t {
	case "number":
		return "a number"
	case "integer":
		return "an integer"
	case "boolean":
		return "true or false"
	case "object":
		return `a JSON object, such as {"a": 1}`
	case "array":
		return `a JSON array, such as ["a", "b"]`
	case "null":
		return "null"
	}
	return "of type " + t
}
