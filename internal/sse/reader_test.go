package sse

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReaderParsing(t *testing.T) {
	d := func(s string) Event { return Event{Data: s, HasData: true} }
	long := strings.Repeat("x", 3*readBufSize+17) // spans several chunks
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		{"empty input", "", nil},
		{"blank lines only", "\n\n\r\n\r\r", nil},
		{"LF", "data: a\n\n", []Event{d("a")}},
		{"CRLF", "data: a\r\n\r\n", []Event{d("a")}},
		{"CR", "data: a\r\r", []Event{d("a")}},
		{"mixed endings", "event: x\rdata: a\r\ndata: b\n\r\n",
			[]Event{{Type: "x", Data: "a\nb", HasData: true}}},
		{"LF after CR blank line", "data: a\r\r\n", []Event{d("a")}},
		{"LF then CR", "data: a\n\r", []Event{d("a")}},
		{"CR LF LF is two line ends", "data: a\r\n\ndata: b\n\n", []Event{d("a"), d("b")}},
		{"BOM", bom + "data: a\n\n", []Event{d("a")}},
		{"BOM only", bom, nil},
		{"second BOM is not skipped", bom + bom + "data: a\n\n", []Event{{}}},
		{"partial BOM is data", "\xEF\xBBdata: a\n\n", []Event{{}}},
		{"BOM inside value", "data: " + bom + "a\n\n", []Event{d(bom + "a")}},
		{"multi-line data", "data: a\ndata: b\ndata: c\n\n", []Event{d("a\nb\nc")}},
		{"empty data lines", "data\ndata\n\n", []Event{d("\n")}},
		{"priming event", "id: 7\ndata:\n\n",
			[]Event{{ID: "7", HasID: true, HasData: true}}},
		{"no space after colon", "data:a\n\n", []Event{d("a")}},
		{"only one space stripped", "data:  a\n\n", []Event{d(" a")}},
		{"trailing space kept", "data: a  \n\n", []Event{d("a  ")}},
		{"colons in value", "data: a:b: c\n\n", []Event{d("a:b: c")}},
		{"tab is not stripped", "data:\ta\n\n", []Event{d("\ta")}},
		{"NUL in data", "data: a\x00b\n\n", []Event{d("a\x00b")}},
		{"long line", "data: " + long + "\n\n", []Event{d(long)}},
		{"retry digits", "retry: 3000\n\n", []Event{{Retry: 3000, HasRetry: true}}},
		{"retry zero", "retry: 0\n\n", []Event{{HasRetry: true}}},
		{"retry non-digit", "retry: 30a0\n\n", []Event{{}}},
		{"retry negative", "retry: -1\n\n", []Event{{}}},
		{"retry plus", "retry: +1\n\n", []Event{{}}},
		{"retry leading space", "retry:  1\n\n", []Event{{}}},
		{"retry empty", "retry:\n\n", []Event{{}}},
		{"retry no colon", "retry\n\n", []Event{{}}},
		{"retry overflow", "retry: 99999999999999999999999\n\n", []Event{{}}},
		{"invalid retry keeps valid one", "retry: 5\nretry: x\n\n",
			[]Event{{Retry: 5, HasRetry: true}}},
		{"comments", ": hello\n:world\n:  two\n:\n\n",
			[]Event{{Comments: []string{"hello", "world", " two", ""}}}},
		{"comment with data", ":c\ndata: a\n\n",
			[]Event{{Data: "a", HasData: true, Comments: []string{"c"}}}},
		{"comment with colon", ": a: b\n\n", []Event{{Comments: []string{"a: b"}}}},
		{"unknown field ignored", "foo: bar\ndata: a\n\n", []Event{d("a")}},
		{"unknown field alone", "foo: bar\n\n", []Event{{}}},
		{"field names are case-sensitive", "Data: a\n\n", []Event{{}}},
		{"leading space in name", " data: a\n\n", []Event{{}}},
		{"data without colon", "data\n\n", []Event{d("")}},
		{"event without colon", "event\n\n", []Event{{}}},
		{"id without colon", "id\n\n", []Event{{HasID: true}}},
		{"empty id", "id:\n\n", []Event{{HasID: true}}},
		{"id with NUL ignored", "id: a\x00b\ndata: x\n\n", []Event{d("x")}},
		{"id with NUL keeps earlier id", "id: 1\nid: \x00\n\n",
			[]Event{{ID: "1", HasID: true}}},
		{"last id wins", "id: 1\nid: 2\n\n", []Event{{ID: "2", HasID: true}}},
		{"last type wins", "event: a\nevent: b\n\n", []Event{{Type: "b"}}},
		{"empty type resets", "event: a\nevent:\n\n", []Event{{}}},
		{"all fields", ": c\nid: 9\nevent: e\nretry: 10\ndata: x\n\n", []Event{{
			Type: "e", Data: "x", HasData: true, ID: "9", HasID: true,
			Retry: 10, HasRetry: true, Comments: []string{"c"},
		}}},
		{"two events", "data: 1\n\ndata: 2\n\n", []Event{d("1"), d("2")}},
		{"fields do not leak", "id: 1\nevent: e\nretry: 5\n:c\ndata: 1\n\ndata: 2\n\n",
			[]Event{{ID: "1", HasID: true, Type: "e", Retry: 5, HasRetry: true,
				Comments: []string{"c"}, Data: "1", HasData: true}, d("2")}},
		{"no trailing blank line", "data: a", []Event{d("a")}},
		{"no trailing blank line LF", "data: a\n", []Event{d("a")}},
		{"no trailing blank line CR", "data: a\r", []Event{d("a")}},
		{"no trailing blank line CRLF", "data: 1\n\ndata: a\r\n", []Event{d("1"), d("a")}},
		{"unterminated comment", ":x", []Event{{Comments: []string{"x"}}}},
	}
	readers := map[string]func(string) io.Reader{
		"whole":   func(s string) io.Reader { return strings.NewReader(s) },
		"onebyte": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"half":    func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
		"dataerr": func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
	}
	for _, tt := range tests {
		for rname, mk := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				got, err := readAll(NewReader(mk(tt.in), 0))
				if err != io.EOF {
					t.Fatalf("final error = %v, want io.EOF", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("events mismatch\n got: %#v\nwant: %#v", got, tt.want)
				}
				ref, _ := refParse(tt.in, DefaultMaxEventSize)
				if !equalEvents(ref, got) {
					t.Fatalf("reference parser disagrees: %#v", ref)
				}
			})
		}
	}
}

func TestReaderEOFIsSticky(t *testing.T) {
	r := NewReader(strings.NewReader("data: a"), 0)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("err = %v, want io.EOF", err)
		}
	}
}

func TestReaderLastEventID(t *testing.T) {
	in := "id: a\ndata: 1\n\n" + // sets "a"
		"data: 2\n\n" + // no id: keeps "a"
		"id: b\n\n" + // id-only block still counts
		"id: x\x00y\ndata: 3\n\n" + // NUL: ignored, keeps "b"
		"id\ndata: 4\n\n" + // empty id resets
		"id: c\ndata: 5" // unterminated final event
	want := []string{"a", "a", "b", "b", "", "c"}
	r := NewReader(strings.NewReader(in), 0)
	if r.LastEventID() != "" {
		t.Fatalf("initial LastEventID = %q", r.LastEventID())
	}
	for i, w := range want {
		if _, err := r.Next(); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if got := r.LastEventID(); got != w {
			t.Fatalf("after event %d LastEventID = %q, want %q", i, got, w)
		}
	}
}

// TestReaderCRDoesNotBlock shows that an event ended by CR CR is delivered
// while the writer is still holding back the next byte, and that an LF that
// arrives later is treated as the second half of a CRLF.
func TestReaderCRDoesNotBlock(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	r := NewReader(pr, 0)

	ch := nextAsync(r)
	if _, err := pw.Write([]byte("data: x\r")); err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	// No more bytes are written until Next has returned.
	res := await(t, ch)
	if res.err != nil || res.ev.Data != "x" {
		t.Fatalf("Next = %#v, %v", res.ev, res.err)
	}

	ch = nextAsync(r)
	if _, err := pw.Write([]byte("\ndata: y\r")); err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Write([]byte("\n\r")); err != nil {
		t.Fatal(err)
	}
	res = await(t, ch)
	if res.err != nil || !reflect.DeepEqual(res.ev, Event{Data: "y", HasData: true}) {
		t.Fatalf("Next = %#v, %v", res.ev, res.err)
	}

	ch = nextAsync(r)
	pw.Close()
	if res := await(t, ch); res.err != io.EOF {
		t.Fatalf("Next after close = %#v, %v", res.ev, res.err)
	}
}

// TestReaderBOMDoesNotBlock shows the BOM check reads no further than it
// must: the first event is delivered as soon as its blank line arrives.
func TestReaderBOMDoesNotBlock(t *testing.T) {
	for _, first := range []string{"a\r\r", "\xEF\r\r", "\xEF\xBB\r\r", bom + "a\r\r"} {
		pr, pw := io.Pipe()
		r := NewReader(pr, 0)
		ch := nextAsync(r)
		for i := range len(first) {
			if _, err := pw.Write([]byte{first[i]}); err != nil {
				t.Fatal(err)
			}
		}
		if res := await(t, ch); res.err != nil {
			t.Fatalf("%q: %v", first, res.err)
		}
		pr.Close()
	}
}

func TestReaderSizeLimit(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		wantN   int // events returned before the error
		wantErr bool
	}{
		{"exactly at limit", "data: abc\n\n", 9, 1, false},
		{"one over", "data: abc\n\n", 8, 0, true},
		{"line endings not counted", "data: abc\r\n\r\n", 9, 1, false},
		{"lines add up", "data: a\ndata: b\n\n", 14, 1, false},
		{"lines add up over", "data: a\ndata: b\n\n", 13, 0, true},
		{"blank line resets", "data: abc\n\ndata: abc\n\n", 9, 2, false},
		{"second event too large", "data: abc\n\ndata: abcd\n\n", 9, 1, true},
		{"comments count", ":12345678\n\n", 8, 0, true},
		{"unknown fields count", "x\nx\nx\n\n", 2, 0, true},
		{"unterminated line", "data: " + strings.Repeat("a", 10000), 9999, 0, true},
	}
	for _, tt := range tests {
		for _, one := range []bool{false, true} {
			var src io.Reader = strings.NewReader(tt.in)
			if one {
				src = iotest.OneByteReader(src)
			}
			evs, err := readAll(NewReader(src, tt.max))
			if len(evs) != tt.wantN {
				t.Errorf("%s: got %d events, want %d", tt.name, len(evs), tt.wantN)
			}
			if tt.wantErr != errors.Is(err, ErrEventTooLarge) {
				t.Errorf("%s: err = %v", tt.name, err)
			}
			if !tt.wantErr && err != io.EOF {
				t.Errorf("%s: err = %v, want io.EOF", tt.name, err)
			}
		}
	}
}

func TestReaderSizeErrorMessage(t *testing.T) {
	r := NewReader(strings.NewReader("data: abc\n\n"), 4)
	_, err := r.Next()
	if !errors.Is(err, ErrEventTooLarge) || err.Error() != "sse: event exceeds 4 bytes" {
		t.Fatalf("err = %v", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Fatalf("error not sticky: %v", err2)
	}
	if NewReader(nil, 0).max != DefaultMaxEventSize || NewReader(nil, -1).max != DefaultMaxEventSize {
		t.Fatal("non-positive limit does not select DefaultMaxEventSize")
	}
	if DefaultMaxEventSize != 16<<20 || (&tooLargeError{DefaultMaxEventSize}).Error() !=
		"sse: event exceeds 16777216 bytes" {
		t.Fatal("unexpected default limit")
	}
}

// errSource yields its data and then fails with err.
type errSource struct {
	data string
	err  error
}

func (s *errSource) Read(p []byte) (int, error) {
	if s.data == "" {
		return 0, s.err
	}
	n := copy(p, s.data)
	s.data = s.data[n:]
	return n, nil
}

func TestReaderUnderlyingError(t *testing.T) {
	boom := errors.New("boom")
	src := &errSource{data: "data: a\n\ndata: b\n", err: boom}
	r := NewReader(src, 0)
	ev, err := r.Next()
	if err != nil || ev.Data != "a" {
		t.Fatalf("first Next = %#v, %v", ev, err)
	}
	_, err = r.Next() // the incomplete "b" block is discarded
	if !errors.Is(err, boom) || err.Error() != "sse: read: boom" {
		t.Fatalf("err = %v, want wrapped boom", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Fatalf("error not sticky: %v", err2)
	}

	unexpected := NewReader(&errSource{data: "data: a", err: io.ErrUnexpectedEOF}, 0)
	if _, err := unexpected.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

// stuckSource always returns (0, nil).
type stuckSource struct{}

func (stuckSource) Read([]byte) (int, error) { return 0, nil }

// badSource returns an impossible byte count.
type badSource struct{}

func (badSource) Read(p []byte) (int, error) { return len(p) + 1, nil }

func TestReaderMisbehavingSource(t *testing.T) {
	if _, err := NewReader(stuckSource{}, 0).Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("stuck source: err = %v", err)
	}
	if _, err := NewReader(badSource{}, 0).Next(); !errors.Is(err, errInvalidRead) {
		t.Fatalf("bad source: err = %v", err)
	}
}
