package jsonrpc

import (
	"encoding/json"
	"errors"
	"io"
)

// ErrTooLarge is what Reader.Next reports for a message over its size
// limit. The excess is not read: the caller drops the body.
var ErrTooLarge = errors.New("jsonrpc: message over the size limit")

// Reader reads the JSON-RPC messages of an application/json body. Such a
// body is usually one message, possibly spread over many lines; a server of
// the 2026-07-28 revision may also send several, newline-delimited (a
// progress notification, then the result). Reader takes the body as a
// stream of JSON values, the way encoding/json's Decoder does, so both
// read alike.
//
// The size limit bounds each message, not the body: a body of many small
// messages is read whatever its total, and one message over the limit is
// ErrTooLarge without being read whole. Whitespace before a message counts
// towards it, and so does whitespace that ends the body: the decoder keeps
// what it reads until a value ends.
type Reader struct {
	in    *budgetReader
	dec   *json.Decoder
	limit int64
	read  int // messages returned
}

// NewReader reads the messages of r, each at most limit bytes.
func NewReader(r io.Reader, limit int) *Reader {
	in := &budgetReader{r: r}
	return &Reader{in: in, dec: json.NewDecoder(in), limit: int64(limit)}
}

// Next returns the next message and the bytes it was decoded from, which it
// aliases; they are the caller's to keep. At the end of the body it
// returns io.EOF, but a body with no message at all is a parse error, as
// Decode says of empty input.
//
// Bytes that are not JSON (a body cut short included) give the *Error
// Decode gives for them (ErrParse); a JSON value that is not a JSON-RPC
// message gives Decode's error for it, with the message when its id could
// be read, and the bytes. A failure to read the body is returned as it
// came. After any error but a message that is not JSON-RPC, the rest of
// the body cannot be read.
func (r *Reader) Next() (*Message, []byte, error) {
	start := r.dec.InputOffset()
	// One byte more than the limit tells a message of exactly the limit
	// from a longer one; the decoder's read-ahead beyond the message's end
	// counts towards the next one.
	r.in.max = start + r.limit + 1
	var raw json.RawMessage
	err := r.dec.Decode(&raw)
	var syn *json.SyntaxError
	switch {
	case err == nil:
	case errors.Is(err, errOverBudget):
		return nil, nil, ErrTooLarge
	case err == io.EOF && r.read > 0:
		return nil, nil, io.EOF
	case err == io.EOF, err == io.ErrUnexpectedEOF, errors.As(err, &syn):
		return nil, nil, decodeError(ErrParse, CodeParseError, "Parse error: the body is not valid JSON")
	default:
		return nil, nil, err
	}
	if r.dec.InputOffset()-start > r.limit {
		return nil, nil, ErrTooLarge
	}
	r.read++
	m, err := decodeValid(raw)
	return m, raw, err
}

// errOverBudget is budgetReader's refusal to read past a message's limit.
var errOverBudget = errors.New("jsonrpc: read past the message's size limit")

// budgetReader reads r until its total reaches max, then refuses.
type budgetReader struct {
	r    io.Reader
	read int64
	max  int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	left := b.max - b.read
	if left <= 0 {
		return 0, errOverBudget
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}
