package stdioface

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// The stdio transport's framing: one JSON-RPC message per line.

// readLines calls fn with each line of r, without its line ending (\n or
// \r\n); the last line may end at EOF instead. A line over max bytes is
// skipped to its end and reported with tooLong set and no content. It
// returns when fn returns false (nil), at EOF (io.EOF) or on a read error.
// Each line is a fresh slice that fn may keep.
func readLines(r io.Reader, max int, fn func(line []byte, tooLong bool) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case tooLong:
		case len(buf)+len(chunk) > max+2: // room for \r\n
			tooLong, buf = true, nil
		default:
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (!errors.Is(err, io.EOF) || len(buf) == 0 && !tooLong) {
			return err
		}
		line := bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r"))
		if len(line) > max {
			tooLong, line = true, nil
		}
		if !fn(line, tooLong) {
			return nil
		}
		buf, tooLong = nil, false
		if err != nil {
			return err
		}
	}
}

// decodeLine decodes one line from the client. A blank line is nothing (nil,
// nil). A line that is not one JSON-RPC message gives the JSON-RPC error to
// answer with, and the message when its id could be read.
func decodeLine(line []byte, tooLong bool) (*jsonrpc.Message, *jsonrpc.Error) {
	if tooLong {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: a message over %d bytes", faceMaxLine))
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, nil
	}
	m, err := jsonrpc.Decode(line)
	if err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			rpcErr = jsonrpc.NewError(jsonrpc.CodeParseError, err.Error())
		}
		return m, rpcErr
	}
	if m.Kind() == 0 {
		return m, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "Invalid Request: neither a request, a notification nor a response")
	}
	return m, nil
}

// frameLine encodes m as one line, newline included. Raw members from the
// hub may hold insignificant whitespace, newlines among it; compacting
// removes it and keeps every value as it is.
func frameLine(m *jsonrpc.Message) []byte { return frameData(m.Encode()) }

// frameData is frameLine for a message already encoded: line, without
// line breaks, ending with one. line is the caller's no more: the newline
// may be appended in place.
func frameData(line []byte) []byte {
	if bytes.ContainsAny(line, "\r\n") {
		var buf bytes.Buffer
		buf.Grow(len(line) + 1)
		if json.Compact(&buf, line) == nil {
			line = buf.Bytes()
		}
	}
	return append(line, '\n')
}
