package jsonrpc

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Append appends the message's JSON encoding to dst and returns the extended
// buffer. Raw members are copied as they are; only the method and the error
// message are quoted. Members are written in a fixed order: jsonrpc, id,
// method, params, result, error.
func (m *Message) Append(dst []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	if m.ID != nil {
		dst = append(dst, `,"id":`...)
		dst = append(dst, m.ID...)
	}
	if m.Method != "" {
		dst = append(dst, `,"method":`...)
		dst = AppendString(dst, m.Method)
	}
	if m.Params != nil {
		dst = append(dst, `,"params":`...)
		dst = append(dst, m.Params...)
	}
	if m.Error != nil {
		dst = append(dst, `,"error":`...)
		dst = m.Error.Append(dst)
	} else if m.Result != nil {
		dst = append(dst, `,"result":`...)
		dst = append(dst, m.Result...)
	}
	return append(dst, '}')
}

// AppendArray appends items, raw, as one JSON array to dst and returns the
// extended buffer; the items are not re-encoded.
func AppendArray(dst []byte, items []json.RawMessage) []byte {
	dst = append(dst, '[')
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, it...)
	}
	return append(dst, ']')
}

// MarshalJSON encodes the message, so a Message can sit inside other values.
func (m *Message) MarshalJSON() ([]byte, error) {
	return m.Append(make([]byte, 0, 64+len(m.Params)+len(m.Result))), nil
}

// Encode returns the message's JSON encoding.
func (m *Message) Encode() []byte {
	b, _ := m.MarshalJSON()
	return b
}

// Append appends the error object's JSON encoding to dst.
func (e *Error) Append(dst []byte) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = append(dst, `,"message":`...)
	dst = AppendString(dst, e.Message)
	if e.Data != nil {
		dst = append(dst, `,"data":`...)
		dst = append(dst, e.Data...)
	}
	return append(dst, '}')
}

// MarshalJSON encodes the error object.
func (e *Error) MarshalJSON() ([]byte, error) {
	return e.Append(nil), nil
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does, so the output is always valid JSON.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Quote returns s as raw JSON string, e.g. for building an id or a params value.
func Quote(s string) json.RawMessage {
	return AppendString(nil, s)
}
