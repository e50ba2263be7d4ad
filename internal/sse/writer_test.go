package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestWriterOutput(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"data", Event{Data: "hello"}, "data: hello\n\n"},
		{"data flag only", Event{HasData: true}, "data:\n\n"},
		{"no data", Event{ID: "1"}, "id: 1\n\n"},
		{"priming", Event{ID: "1", HasID: true, HasData: true}, "id: 1\ndata:\n\n"},
		{"empty id", Event{HasID: true}, "id:\n\n"},
		{"type", Event{Type: "message", Data: "x"}, "event: message\ndata: x\n\n"},
		{"LF lines", Event{Data: "a\nb"}, "data: a\ndata: b\n\n"},
		{"mixed lines", Event{Data: "a\r\nb\rc\nd"}, "data: a\ndata: b\ndata: c\ndata: d\n\n"},
		{"CR CR", Event{Data: "a\r\rb"}, "data: a\ndata:\ndata: b\n\n"},
		{"trailing newline", Event{Data: "a\n"}, "data: a\ndata:\n\n"},
		{"only newline", Event{Data: "\r\n"}, "data:\ndata:\n\n"},
		{"leading space kept", Event{Data: " a", ID: " i", Type: " t"},
			"id:  i\nevent:  t\ndata:  a\n\n"},
		{"retry", Event{Retry: 1500, HasRetry: true}, "retry: 1500\n\n"},
		{"retry zero", Event{HasRetry: true}, "retry: 0\n\n"},
		{"retry without flag", Event{Retry: 5}, "\n"},
		{"comments", Event{Comments: []string{"a", "", " b"}}, ": a\n:\n:  b\n\n"},
		{"empty event", Event{}, "\n"},
		{"field order", Event{
			Type: "t", Data: "d", HasData: true, ID: "i", HasID: true,
			Retry: 7, HasRetry: true, Comments: []string{"c1", "c2"},
		}, ": c1\n: c2\nid: i\nevent: t\nretry: 7\ndata: d\n\n"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		if err := NewWriter(&buf).WriteEvent(tt.ev); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if buf.String() != tt.want {
			t.Errorf("%s: wrote %q, want %q", tt.name, buf.String(), tt.want)
		}
	}
}

func TestWriteComment(t *testing.T) {
	for text, want := range map[string]string{"ping": ": ping\n\n", "": ":\n\n", " x": ":  x\n\n"} {
		var buf bytes.Buffer
		if err := NewWriter(&buf).WriteComment(text); err != nil {
			t.Fatal(err)
		}
		if buf.String() != want {
			t.Errorf("WriteComment(%q) wrote %q, want %q", text, buf.String(), want)
		}
	}
}

func TestWriterRejectsInvalidFields(t *testing.T) {
	bad := []Event{
		{ID: "a\nb"}, {ID: "a\rb"}, {ID: "a\x00b"}, {ID: "\n", HasID: true},
		{Type: "a\nb"}, {Type: "a\r"},
		{Comments: []string{"ok", "a\nb"}}, {Comments: []string{"\r"}},
		{Retry: -1, HasRetry: true},
	}
	for _, ev := range bad {
		fw := &countingWriter{}
		err := NewWriter(fw).WriteEvent(ev)
		if !errors.Is(err, ErrInvalidField) {
			t.Errorf("WriteEvent(%#v) err = %v, want ErrInvalidField", ev, err)
		}
		if fw.writes != 0 || fw.flushes != 0 {
			t.Errorf("WriteEvent(%#v) wrote despite the error", ev)
		}
	}
	for _, text := range []string{"a\nb", "\r", "x\r\n"} {
		if err := NewWriter(io.Discard).WriteComment(text); !errors.Is(err, ErrInvalidField) {
			t.Errorf("WriteComment(%q) err = %v", text, err)
		}
	}
	// Values that do round-trip are accepted.
	ok := Event{ID: "é", Type: "a\x00b", Comments: []string{"\x00"}, Data: "\x00\r\n"}
	if err := NewWriter(io.Discard).WriteEvent(ok); err != nil {
		t.Errorf("WriteEvent(%#v) = %v", ok, err)
	}
}

// countingWriter counts Write and Flush calls, like an http.ResponseWriter
// that implements http.Flusher.
type countingWriter struct {
	bytes.Buffer
	writes, flushes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

func (w *countingWriter) Flush() { w.flushes++ }

// errFlushWriter has a Flush() error method, like bufio.Writer.
type errFlushWriter struct {
	writes, flushes int
	err             error
}

func (w *errFlushWriter) Write(p []byte) (int, error) { w.writes++; return len(p), nil }
func (w *errFlushWriter) Flush() error                { w.flushes++; return w.err }

func TestWriterOneWriteOneFlush(t *testing.T) {
	cw := &countingWriter{}
	w := NewWriter(cw)
	big := Event{ID: "1", Type: "t", Data: strings.Repeat("line\n", 10000), Comments: []string{"a", "b"}}
	for i, call := range []func() error{
		func() error { return w.WriteEvent(Event{Data: "a\nb\nc"}) },
		func() error { return w.WriteEvent(big) },
		func() error { return w.WriteComment("ping") },
		func() error { return w.WriteEvent(Event{}) },
	} {
		if err := call(); err != nil {
			t.Fatal(err)
		}
		if cw.writes != i+1 || cw.flushes != i+1 {
			t.Fatalf("after %d calls: %d writes, %d flushes", i+1, cw.writes, cw.flushes)
		}
	}

	ef := &errFlushWriter{}
	if err := NewWriter(ef).WriteEvent(Event{Data: "x\ny"}); err != nil || ef.writes != 1 || ef.flushes != 1 {
		t.Fatalf("Flush() error writer: err %v, %d writes, %d flushes", err, ef.writes, ef.flushes)
	}
	ef.err = errors.New("flush failed")
	if err := NewWriter(ef).WriteComment("x"); !errors.Is(err, ef.err) {
		t.Fatalf("flush error not returned: %v", err)
	}

	rec := httptest.NewRecorder()
	if err := NewWriter(rec).WriteEvent(Event{Data: "x"}); err != nil || !rec.Flushed {
		t.Fatalf("httptest.ResponseRecorder not flushed: %v", err)
	}

	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	if err := NewWriter(bw).WriteEvent(Event{Data: "x"}); err != nil || out.String() != "data: x\n\n" {
		t.Fatalf("bufio.Writer not flushed: %v, %q", err, out.String())
	}
}

type failWriter struct{ n int }

func (w failWriter) Write(p []byte) (int, error) {
	if w.n >= 0 {
		return min(w.n, len(p)), nil
	}
	return 0, errors.New("broken pipe")
}

func (failWriter) Flush() { panic("flushed after a failed write") }

func TestWriterWriteErrors(t *testing.T) {
	if err := NewWriter(failWriter{n: -1}).WriteEvent(Event{Data: "x"}); err == nil ||
		err.Error() != "sse: write: broken pipe" {
		t.Fatalf("err = %v", err)
	}
	if err := NewWriter(failWriter{n: 2}).WriteComment("x"); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("err = %v, want io.ErrShortWrite", err)
	}
}

// TestWriterConcurrent checks that concurrent calls never interleave
// their blocks (and, under -race, that the Writer is race-free).
func TestWriterConcurrent(t *testing.T) {
	var buf bytes.Buffer // not safe for concurrent use on its own
	w := NewWriter(&buf)
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				var err error
				if i%10 == 0 {
					err = w.WriteComment("hb")
				} else {
					err = w.WriteEvent(Event{ID: fmt.Sprint(g, "-", i), Data: fmt.Sprintf("g%d\ni%d", g, i)})
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	evs, err := readAll(NewReader(&buf, 0))
	if err != io.EOF || len(evs) != goroutines*each {
		t.Fatalf("read %d events, err %v", len(evs), err)
	}
	for _, ev := range evs {
		if len(ev.Comments) == 1 && ev.Comments[0] == "hb" && !ev.HasData {
			continue
		}
		var g, i int
		if _, err := fmt.Sscanf(ev.Data, "g%d\ni%d", &g, &i); err != nil || ev.ID != fmt.Sprint(g, "-", i) {
			t.Fatalf("corrupted event %#v", ev)
		}
	}
}

func TestWriterAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	w := NewWriter(&countingWriter{})
	ev := Event{ID: "42", HasID: true, Type: "message", Data: `{"jsonrpc":"2.0"}` + "\n" + "x"}
	cw := w.w.(*countingWriter)
	if n := testing.AllocsPerRun(1000, func() {
		cw.Reset()
		if err := w.WriteEvent(ev); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("WriteEvent allocates %v times per call", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		cw.Reset()
		if err := w.WriteComment("ping"); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("WriteComment allocates %v times per call", n)
	}
}
