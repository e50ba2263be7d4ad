// Package jsonrpc is the JSON-RPC 2.0 envelope that mcphub speaks on both of
// its sides: as a server to IDE clients and as a client to upstream MCP
// servers.
//
// The envelope is decoded and nothing more: params, result, error data and the
// id stay raw JSON, exactly the bytes that arrived, so the hub can route a
// message by method and id and pass the rest along without re-marshalling it.
// An id therefore round-trips byte for byte: 1, "1" and 1.0 are three
// different ids.
package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Version is the only value the "jsonrpc" member may carry.
const Version = "2.0"

// Standard JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Sentinel errors. A decoding failure is an *Error whose Unwrap returns one
// of them, so callers can test with errors.Is and still have the JSON-RPC code.
var (
	// ErrParse means the bytes are not JSON at all (-32700).
	ErrParse = errors.New("jsonrpc: parse error")
	// ErrInvalidRequest means the JSON is not a valid JSON-RPC 2.0 message (-32600).
	ErrInvalidRequest = errors.New("jsonrpc: invalid request")
	// ErrBatch means the JSON is an array: a batch, which callers decide whether to refuse.
	ErrBatch = errors.New("jsonrpc: batch")
)

// Kind classifies a decoded message.
type Kind int

// The four kinds of JSON-RPC message.
const (
	KindRequest Kind = iota + 1
	KindNotification
	KindResponse
	KindErrorResponse
)

// String names the kind for logs.
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	case KindErrorResponse:
		return "error response"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Message is one JSON-RPC 2.0 message with its payload kept raw.
//
// A decoded Message aliases the buffer it was decoded from: ID, Params, Result
// and Error.Data are sub-slices of it. Do not reuse that buffer while the
// message is in use.
type Message struct {
	// ID is the raw JSON id (a string or a number), nil when absent. For an
	// error response whose request could not be read it is the literal null.
	ID json.RawMessage
	// Method is set for requests and notifications.
	Method string
	// Params is the raw params value, nil when absent.
	Params json.RawMessage
	// Result is the raw result of a successful response.
	Result json.RawMessage
	// Error is set for an error response.
	Error *Error
}

// Kind reports what the message is. A message built by hand that is none of
// the four reports 0.
func (m *Message) Kind() Kind {
	switch {
	case m.Method != "" && m.ID != nil:
		return KindRequest
	case m.Method != "":
		return KindNotification
	case m.Error != nil:
		return KindErrorResponse
	case m.Result != nil:
		return KindResponse
	}
	return 0
}

// IsRequest reports whether the message is a request (it has a method and an id).
func (m *Message) IsRequest() bool { return m.Kind() == KindRequest }

// IsNotification reports whether the message is a notification.
func (m *Message) IsNotification() bool { return m.Kind() == KindNotification }

// IsResponse reports whether the message is a response, successful or not.
func (m *Message) IsResponse() bool {
	k := m.Kind()
	return k == KindResponse || k == KindErrorResponse
}

// Error is a JSON-RPC error object. It also serves as the Go error returned by
// Decode, carrying the code a server should answer with.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`

	// cause links a decoding error to its sentinel; it is not serialised.
	cause error
}

// NewError builds an error object with a code and a message.
func NewError(code int, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Errorf builds an error object with a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithData returns a copy of e carrying data, which must be valid JSON.
func (e *Error) WithData(data json.RawMessage) *Error {
	c := *e
	c.Data = data
	return &c
}

// Error formats the error for logs.
func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// Unwrap returns the sentinel behind a decoding error, if any.
func (e *Error) Unwrap() error { return e.cause }

// NewRequest builds a request. params may be nil.
func NewRequest(id json.RawMessage, method string, params json.RawMessage) *Message {
	return &Message{ID: id, Method: method, Params: params}
}

// NewNotification builds a notification. params may be nil.
func NewNotification(method string, params json.RawMessage) *Message {
	return &Message{Method: method, Params: params}
}

// NewResponse builds a successful response. A nil result is sent as {}.
func NewResponse(id json.RawMessage, result json.RawMessage) *Message {
	if result == nil {
		result = json.RawMessage("{}")
	}
	return &Message{ID: id, Result: result}
}

// NewErrorResponse builds an error response. A nil id is sent as null, as
// JSON-RPC requires when the request's id could not be read.
func NewErrorResponse(id json.RawMessage, err *Error) *Message {
	if id == nil {
		id = json.RawMessage("null")
	}
	return &Message{ID: id, Error: err}
}

// IntID returns the raw id for an integer, as mcphub mints for its own requests.
func IntID(n int64) json.RawMessage {
	return strconv.AppendInt(nil, n, 10)
}

// ParseIntID reports the integer value of an id that mcphub minted with IntID.
func ParseIntID(id json.RawMessage) (int64, bool) {
	n, err := strconv.ParseInt(string(id), 10, 64)
	return n, err == nil
}
