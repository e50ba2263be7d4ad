package stdioface

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// TestLines: lines end with \n or \r\n, the last may end at EOF, a blank
// line is nothing, a line over the limit is refused without its content,
// and what is not a JSON-RPC message gets the error to answer with.
func TestLines(t *testing.T) {
	in := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\n" + strings.Repeat("x", 80) + "\nnot json\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}"
	var got []string
	err := readLines(strings.NewReader(in), 64, func(line []byte, tooLong bool) bool {
		m, rpcErr := decodeLine(line, tooLong)
		switch {
		case rpcErr != nil:
			got = append(got, "error "+rpcErr.Error())
		case m == nil:
			got = append(got, "nothing")
		default:
			got = append(got, m.Method)
		}
		return true
	})
	if !errors.Is(err, io.EOF) {
		t.Fatalf("readLines ended with %v, want EOF", err)
	}
	if len(got) != 5 || got[0] != "ping" || got[1] != "nothing" || !strings.Contains(got[2], "Invalid Request: a message over") ||
		!strings.HasPrefix(got[3], "error ") || got[4] != "n" {
		t.Errorf("lines = %q", got)
	}
	framed := frameData([]byte("{\"a\":\n1}"))
	if string(framed) != "{\"a\":1}\n" {
		t.Errorf("frameData of a message with a newline = %q, want it compacted on one line", framed)
	}
}

// FuzzLines: any input splits into lines that each either decode to a
// message, whose framing for the other side is one line of valid JSON, or
// give a JSON-RPC error to answer with; nothing panics.
func FuzzLines(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\r\n\n",
		"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{\"a\":\n1}}",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		strings.Repeat("x", 100) + "\n{}",
		"\xff\xfe\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = 64
		err := readLines(bytes.NewReader(data), max, func(line []byte, tooLong bool) bool {
			if tooLong && line != nil {
				t.Fatalf("a line over the limit came with content")
			}
			if len(line) > max || bytes.ContainsRune(line, '\n') {
				t.Fatalf("bad line %q", line)
			}
			m, rpcErr := decodeLine(line, tooLong)
			switch {
			case rpcErr != nil:
				out := frameLine(jsonrpc.NewErrorResponse(nil, rpcErr))
				if !json.Valid(out) || bytes.IndexByte(out, '\n') != len(out)-1 {
					t.Fatalf("error framed as %q", out)
				}
			case m != nil:
				out := frameLine(m)
				if !json.Valid(out) || bytes.IndexByte(out, '\n') != len(out)-1 {
					t.Fatalf("%q framed as %q", line, out)
				}
			}
			return true
		})
		if !errors.Is(err, io.EOF) {
			t.Fatalf("readLines ended with %v, want EOF", err)
		}
	})
}
