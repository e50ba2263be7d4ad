package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
)

// errNotObject is returned by the member helpers for a value that is not a
// JSON object.
var errNotObject = errors.New("jsonrpc: not a JSON object")

// Member returns the raw value of a top-level member of a JSON object, as a
// sub-slice of obj. obj must be valid JSON (as every raw payload Decode
// returns is).
func Member(obj json.RawMessage, key string) (json.RawMessage, bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	var found json.RawMessage
	eachMember(obj, i, func(k, v []byte) {
		if string(k) == key {
			found = v
		}
	})
	return found, found != nil
}

// Members calls fn once for every top-level member of a JSON object, in
// order, with the key decoded and the value raw (a sub-slice of obj), and
// reports whether obj is an object. It reads obj once however many members
// the caller wants. The key is only valid during the call; comparing it as
// string(key) == "name" costs no allocation. obj must be valid JSON.
func Members(obj json.RawMessage, fn func(key []byte, value json.RawMessage)) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	eachMember(obj, i, func(k, v []byte) { fn(k, v) })
	return true
}

// String decodes a raw JSON string value; false for any other value.
func String(raw json.RawMessage) (string, bool) { return jsonString(raw) }

// StringMember returns a top-level member decoded as a string.
func StringMember(obj json.RawMessage, key string) (string, bool) {
	v, ok := Member(obj, key)
	if !ok {
		return "", false
	}
	return jsonString(v)
}

// SetMember returns a copy of the JSON object obj with the top-level member
// key set to value (raw JSON), replacing it where it is or appending it. Every
// other member keeps its bytes: this is how mcphub rewrites a tool name or a
// progress token without re-marshalling the arguments. A nil or empty obj is
// treated as {}.
func SetMember(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) {
		obj, i = json.RawMessage("{}"), 0
	}
	if obj[i] != '{' {
		return nil, errNotObject
	}
	start, end := -1, -1
	eachMemberSpan(obj, i, func(k []byte, vs, ve int) {
		if string(k) == key {
			start, end = vs, ve
		}
	})
	out := make([]byte, 0, len(obj)+len(key)+len(value)+4)
	if start >= 0 {
		out = append(out, obj[:start]...)
		out = append(out, value...)
		return append(out, obj[end:]...), nil
	}
	// Append before the closing brace.
	close := len(obj) - 1
	for close > 0 && obj[close] != '}' {
		close--
	}
	body := obj[:close]
	out = append(out, body...)
	if j := skipSpaceBack(body); j >= 0 && body[j] != '{' {
		out = append(out, ',')
	}
	out = AppendString(out, key)
	out = append(out, ':')
	out = append(out, value...)
	return append(out, obj[close:]...), nil
}

// DeleteMember returns a copy of obj without the top-level member key.
func DeleteMember(obj json.RawMessage, key string) (json.RawMessage, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, errNotObject
	}
	var spans [][2]int // key start .. value end, per member
	keyAt := -1
	eachMemberSpan(obj, i, func(k []byte, vs, ve int) {
		spans = append(spans, [2]int{0, ve})
		if string(k) == key {
			keyAt = len(spans) - 1
		}
	})
	if keyAt < 0 {
		return append(json.RawMessage(nil), obj...), nil
	}
	// Rebuild from the member list: cut from the end of the previous member
	// (or the '{') to the end of this one, which drops its comma too.
	prevEnd := i + 1
	if keyAt > 0 {
		prevEnd = spans[keyAt-1][1]
	}
	cutEnd := spans[keyAt][1]
	if keyAt == 0 && len(spans) > 1 {
		// The first member: drop it and the comma after it instead.
		j := skipSpace(obj, cutEnd)
		if j < len(obj) && obj[j] == ',' {
			cutEnd = j + 1
		}
	}
	out := make([]byte, 0, len(obj))
	out = append(out, obj[:prevEnd]...)
	return append(out, obj[cutEnd:]...), nil
}

// eachMemberSpan walks the members of the (valid) object at obj[i], giving
// each decoded key and the byte span of its value.
func eachMemberSpan(obj []byte, i int, fn func(key []byte, vs, ve int)) {
	i = skipSpace(obj, i+1)
	if i >= len(obj) || obj[i] == '}' {
		return
	}
	for i < len(obj) {
		end := skipString(obj, i)
		rawKey := obj[i:end]
		key := rawKey[1 : len(rawKey)-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			if s, ok := jsonString(rawKey); ok {
				key = []byte(s)
			}
		}
		i = skipSpace(obj, end)
		i = skipSpace(obj, i+1) // past ':'
		vend := skipValue(obj, i)
		fn(key, i, vend)
		i = skipSpace(obj, vend)
		if i >= len(obj) || obj[i] == '}' {
			return
		}
		i = skipSpace(obj, i+1) // past ','
	}
}

func skipSpaceBack(b []byte) int {
	j := len(b) - 1
	for j >= 0 && (b[j] == ' ' || b[j] == '\t' || b[j] == '\n' || b[j] == '\r') {
		j--
	}
	return j
}
