package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads every message of body with a Reader of the given limit,
// until an error; it returns the messages' methods or ids and that error.
func readAll(body string, limit int) ([]string, error) {
	r := NewReader(iotest.OneByteReader(strings.NewReader(body)), limit)
	var got []string
	for {
		m, _, err := r.Next()
		if err != nil {
			return got, err
		}
		if m.Method != "" {
			got = append(got, m.Method)
		} else {
			got = append(got, string(m.ID))
		}
	}
}

func TestReaderMessages(t *testing.T) {
	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`
	result := `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"one message", result, []string{"7"}},
		{"pretty-printed over lines", "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 7,\n  \"result\": {}\n}\n", []string{"7"}},
		{"newline-delimited", progress + "\n" + result + "\n", []string{"notifications/progress", "7"}},
		{"CRLF and blank lines", progress + "\r\n\r\n" + result, []string{"notifications/progress", "7"}},
		{"back to back", progress + result, []string{"notifications/progress", "7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(tc.body, 1<<10)
			if err != io.EOF || strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %q, %v; want %q, io.EOF", got, err, tc.want)
			}
		})
	}
}

// Malformed bodies give Decode's errors: not JSON, cut short or empty is a
// parse error; JSON that is no message is an invalid request, and the
// messages around it still read.
func TestReaderErrors(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":1,"result":{}}`
	for _, body := range []string{"", "  \n", "not json", ok + "\nnot json", `{"jsonrpc":"2.0","id":1,`, "\xff"} {
		got, err := readAll(body, 1<<10)
		if !errors.Is(err, ErrParse) {
			t.Errorf("%q: %q, %v; want a parse error", body, got, err)
		}
		var e *Error
		if errors.As(err, &e) && e.Code != CodeParseError {
			t.Errorf("%q: code %d", body, e.Code)
		}
	}
	if _, err := Decode([]byte("not json")); err == nil || !strings.Contains(err.Error(), "Parse error: the body is not valid JSON") {
		t.Fatalf("Decode says %v", err)
	}
	if _, err := readAll("not json", 1<<10); err == nil || !strings.Contains(err.Error(), "Parse error: the body is not valid JSON") {
		t.Errorf("the reader says %v, Decode says otherwise", err)
	}
	r := NewReader(strings.NewReader(`{"a":1} null [] `+"\"\xff\" "+ok), 1<<10)
	for _, want := range []error{ErrInvalidRequest, ErrInvalidRequest, ErrBatch, ErrParse} {
		if _, raw, err := r.Next(); !errors.Is(err, want) || raw == nil {
			t.Fatalf("%s: %v, want %v", raw, err, want)
		}
	}
	if m, raw, err := r.Next(); err != nil || string(m.ID) != "1" || string(raw) != ok {
		t.Fatalf("after messages that are not JSON-RPC: %v %s", err, raw)
	}
}

// The limit bounds each message, not the body; a message over it is
// refused without being read whole.
func TestReaderLimitPerMessage(t *testing.T) {
	small := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 40) + `"}}`
	body := strings.Repeat(small+"\n", 100) + `{"jsonrpc":"2.0","id":1,"result":{}}`
	got, err := readAll(body, len(small)+1)
	if err != io.EOF || len(got) != 101 {
		t.Fatalf("%d messages whose sum is over the limit: %d read, %v", 101, len(got), err)
	}
	// Exactly at the limit (with its leading newline) passes; a byte over
	// does not.
	if got, err := readAll(small+"\n"+small, len(small)+1); err != io.EOF || len(got) != 2 {
		t.Errorf("messages at the limit: %q %v", got, err)
	}
	if got, err := readAll(small, len(small)-1); !errors.Is(err, ErrTooLarge) || len(got) != 0 {
		t.Errorf("a message over the limit: %q %v", got, err)
	}
	if got, err := readAll(small+"\n"+small+" ", len(small)); !errors.Is(err, ErrTooLarge) || len(got) != 1 {
		t.Errorf("a second message over the limit: %q %v", got, err)
	}
	big := `{"jsonrpc":"2.0","id":1,"result":{"t":"` + strings.Repeat("x", 1<<20) + `"}}`
	cr := &countingReader{r: strings.NewReader(big)}
	if _, _, err := NewReader(cr, 4096).Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 1 MiB message under a 4 KiB limit: %v", err)
	}
	if cr.n > 4097 {
		t.Errorf("read %d bytes of a message over a 4096-byte limit", cr.n)
	}
}

// A failure to read the body comes back as it came.
func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0",`), iotest.ErrReader(boom)), 1<<10)
	if _, _, err := r.Next(); !errors.Is(err, boom) {
		t.Errorf("err = %v, want the read error", err)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// FuzzReader checks that Reader never panics, that every message it
// returns is within the limit and is what Decode makes of its bytes, and
// that a body whose values all fit the limit reads as encoding/json's
// Decoder splits it.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		"{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
		"{\n \"jsonrpc\": \"2.0\",\n \"id\": \"x\",\n \"error\": {\"code\": 1, \"message\": \"m\"}\n}",
		`{"a":1} [1] null 12 "s"`, `{"jsonrpc":"2.0","id":1,`, "", "\xff", `{}}`,
	} {
		f.Add([]byte(s), uint16(64))
	}
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		lim := int(limit%512) + 1
		r := NewReader(bytes.NewReader(data), lim)
		var got [][]byte
		var err error
		for range len(data) + 1 {
			var m *Message
			var raw []byte
			m, raw, err = r.Next()
			if raw != nil {
				if len(raw) > lim {
					t.Fatalf("a value of %d bytes under a limit of %d", len(raw), lim)
				}
				want, werr := Decode(raw)
				if (werr == nil) != (err == nil) || err == nil && (want.Kind() != m.Kind() || !bytes.Equal(want.ID, m.ID)) {
					t.Fatalf("Next gave %v, %v for %q; Decode gives %v, %v", m, err, raw, want, werr)
				}
				got = append(got, raw)
				continue
			}
			if err != nil {
				break
			}
			t.Fatal("Next returned neither bytes nor an error")
		}
		if err == nil {
			t.Fatal("Next never ended")
		}
		// The reference: encoding/json's own split, unbounded.
		dec := json.NewDecoder(bytes.NewReader(data))
		var want [][]byte
		fits := true
		var refErr error
		for {
			start := dec.InputOffset()
			var v json.RawMessage
			if refErr = dec.Decode(&v); refErr != nil {
				// Whitespace that ends the body counts too.
				fits = fits && !(refErr == io.EOF && int64(len(data))-start > int64(lim))
				break
			}
			if dec.InputOffset()-start > int64(lim) {
				fits = false
				break
			}
			want = append(want, v)
		}
		if !fits {
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("a value over the limit gave %v", err)
			}
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%d values read, encoding/json splits %d (%v, %v)", len(got), len(want), err, refErr)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("value %d: %q, encoding/json has %q", i, got[i], want[i])
			}
		}
		if (refErr == io.EOF && len(want) > 0) != (err == io.EOF) {
			t.Fatalf("ended with %v; encoding/json with %v after %d values", err, refErr, len(want))
		}
	})
}

// BenchmarkReaderResult reads a 1 MiB result body, for comparison with
// BenchmarkDecodeResult (the same bytes already in memory).
func BenchmarkReaderResult(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("abcdefgh ", 1<<17) + `"}]}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := NewReader(bytes.NewReader(body), 16<<20).Next(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeResult(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("abcdefgh ", 1<<17) + `"}]}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}
