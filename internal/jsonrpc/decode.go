package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// IsBatch reports whether data is a JSON array, i.e. a JSON-RPC batch. It looks
// only at the first non-whitespace byte, so it is cheap enough to call before
// Decode on every body.
func IsBatch(data []byte) bool {
	i := skipSpace(data, 0)
	return i < len(data) && data[i] == '['
}

// Decode parses one JSON-RPC 2.0 message.
//
// It validates the whole input as JSON, then walks only the top-level members,
// matching their names exactly (JSON-RPC member names are case-sensitive,
// unlike encoding/json's struct matching). Member values stay raw and alias
// data. Unknown members are ignored, as JSON-RPC allows.
//
// On failure the error is an *Error whose Code is CodeParseError for bytes that
// are not JSON and CodeInvalidRequest for JSON that is not a valid message;
// errors.Is matches ErrParse, ErrInvalidRequest or, for an array, ErrBatch. The
// returned message is non-nil whenever an id could be read, so the caller can
// answer the error under the request's id.
func Decode(data []byte) (*Message, error) {
	if !json.Valid(data) {
		return nil, decodeError(ErrParse, CodeParseError, "Parse error: the body is not valid JSON")
	}
	return decodeValid(data)
}

// decodeValid is Decode for data already known to be one JSON value
// (Reader's decoder has scanned it).
func decodeValid(data []byte) (*Message, error) {
	// JSON text is UTF-8 (RFC 8259 §8.1), which json.Valid does not check;
	// passing invalid bytes on would make a strict upstream fail.
	if !utf8.Valid(data) {
		return nil, decodeError(ErrParse, CodeParseError, "Parse error: the body is not valid UTF-8")
	}
	i := skipSpace(data, 0)
	switch {
	case i < len(data) && data[i] == '{':
	case i < len(data) && data[i] == '[':
		return nil, decodeError(ErrBatch, CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not supported")
	default:
		return nil, decodeError(ErrInvalidRequest, CodeInvalidRequest, "Invalid Request: a JSON-RPC message must be an object")
	}

	var (
		m                 Message
		version, method   json.RawMessage
		hasMethod, hasErr bool
		errRaw            json.RawMessage
	)
	err := eachMember(data, i, func(key, value []byte) {
		switch string(key) {
		case "jsonrpc":
			version = value
		case "id":
			m.ID = value
		case "method":
			method, hasMethod = value, true
		case "params":
			m.Params = value
		case "result":
			m.Result = value
		case "error":
			// "error": null is treated as absent; some servers send it
			// beside a result.
			errRaw, hasErr = value, string(value) != "null"
		}
	})
	if err != nil {
		return nil, err
	}
	return finish(&m, version, method, hasMethod, errRaw, hasErr)
}

// finish checks the members of a message against JSON-RPC 2.0's rules.
func finish(m *Message, version, method json.RawMessage, hasMethod bool, errRaw json.RawMessage, hasErr bool) (*Message, error) {
	// An id is reported back to the caller only when it is a usable id, so an
	// error response never echoes an object or array as an id.
	idOK := m.ID != nil && (m.ID[0] == '"' || isNumberStart(m.ID[0]))
	withID := func(e error) (*Message, error) {
		if idOK {
			return &Message{ID: m.ID}, e
		}
		return nil, e
	}
	if !bytes.Equal(version, []byte(`"2.0"`)) {
		return withID(invalid(`the "jsonrpc" member must be "2.0"`))
	}
	if m.ID != nil && !idOK && !(string(m.ID) == "null" && !hasMethod) {
		return withID(invalid("an id must be a string or a number (a request id must not be null)"))
	}
	if m.Params != nil {
		switch m.Params[0] {
		case '{', '[':
		case 'n': // "params": null is treated as absent; several clients send it.
			m.Params = nil
		default:
			return withID(invalid("params must be an object or an array"))
		}
	}

	if hasMethod {
		name, ok := jsonString(method)
		if !ok || name == "" {
			return withID(invalid("method must be a non-empty string"))
		}
		if m.Result != nil || hasErr {
			return withID(invalid("a request or notification must not carry result or error"))
		}
		m.Method = name
		return m, nil
	}

	// A response: exactly one of result and error, and an id.
	switch {
	case m.Result != nil && hasErr:
		return withID(invalid("a response must not carry both result and error"))
	case m.Result == nil && !hasErr:
		return withID(invalid("a message needs a method (request or notification) or a result or error (response)"))
	case m.ID == nil:
		return nil, invalid("a response must carry an id")
	case string(m.ID) == "null" && !hasErr:
		return nil, invalid("only an error response may carry a null id")
	}
	if hasErr {
		e, perr := parseErrorObject(errRaw)
		if perr != nil {
			return withID(perr)
		}
		m.Error = e
	}
	return m, nil
}

// parseErrorObject decodes the "error" member: an object with an integer code
// and a string message; data stays raw.
func parseErrorObject(raw json.RawMessage) (*Error, error) {
	if raw[0] != '{' {
		return nil, invalid("error must be an object")
	}
	var code, message, data json.RawMessage
	err := eachMember(raw, 0, func(key, value []byte) {
		switch string(key) {
		case "code":
			code = value
		case "message":
			message = value
		case "data":
			data = value
		}
	})
	if err != nil {
		return nil, err
	}
	n, cerr := strconv.Atoi(string(code))
	if cerr != nil {
		return nil, invalid("error.code must be an integer")
	}
	msg, ok := jsonString(message)
	if !ok {
		return nil, invalid("error.message must be a string")
	}
	return &Error{Code: n, Message: msg, Data: data}, nil
}

func invalid(why string) *Error {
	return decodeError(ErrInvalidRequest, CodeInvalidRequest, "Invalid Request: "+why)
}

func decodeError(cause error, code int, msg string) *Error {
	return &Error{Code: code, Message: msg, cause: cause}
}

// eachMember calls fn for every member of the object starting at data[i].
// data must already be valid JSON. Keys are passed decoded; values raw.
func eachMember(data []byte, i int, fn func(key, value []byte)) error {
	i = skipSpace(data, i+1) // past '{'
	if data[i] == '}' {
		return nil
	}
	for {
		end := skipString(data, i)
		rawKey := data[i:end]
		key := rawKey[1 : len(rawKey)-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			s, ok := jsonString(rawKey)
			if !ok {
				return invalid("a member name could not be decoded")
			}
			key = []byte(s)
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // past ':'
		vend := skipValue(data, i)
		fn(key, data[i:vend])
		i = skipSpace(data, vend)
		if data[i] == '}' {
			return nil
		}
		i = skipSpace(data, i+1) // past ','
	}
}

// jsonString decodes a raw JSON string value. Strings without escapes, the
// common case for method names, are converted without a decoder.
func jsonString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func isNumberStart(c byte) bool { return c == '-' || (c >= '0' && c <= '9') }

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at data[i].
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index just past the (valid) JSON value at data[i].
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = skipString(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default: // number, true, false, null
		for ; i < len(data); i++ {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
		}
		return i
	}
}
