package sse

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// maxPooledBuf is the largest buffer returned to the pool; larger ones,
// built for unusually big events, are left to the garbage collector.
const maxPooledBuf = 64 << 10

var bufPool = sync.Pool{
	New: func() any {
		b := make([]byte, 0, 1024)
		return &b
	},
}

// Writer writes events to an event stream.
//
// Each call builds the whole block in a pooled buffer, writes it with a
// single Write and then, if the underlying writer can flush (it implements
// http.Flusher, whose method is Flush(), or has a Flush() error method),
// flushes it once, so every event reaches the client immediately. A Writer
// is safe for concurrent use; blocks from concurrent calls never interleave.
type Writer struct {
	mu     sync.Mutex
	w      io.Writer
	flush  interface{ Flush() }
	flushE interface{ Flush() error }
}

// NewWriter returns a Writer that writes an event stream to w.
func NewWriter(w io.Writer) *Writer {
	sw := &Writer{w: w}
	switch f := w.(type) {
	case interface{ Flush() error }:
		sw.flushE = f
	case interface{ Flush() }:
		sw.flush = f
	}
	return sw
}

// WriteEvent writes ev as one block: its comments, then the id, event and
// retry fields, then the data lines, then the blank line that ends it.
//
// The id field is written when HasID is set or ID is not empty, the event
// field when Type is not empty, and the retry field when HasRetry is set.
// Data is split into lines at "\n", "\r\n" and "\r", each written as its
// own data field; when Data is empty, a single empty data field is written
// if HasData is set and none otherwise. An Event with no fields at all is
// written as a lone blank line, which readers ignore.
//
// WriteEvent returns an error wrapping [ErrInvalidField], and writes
// nothing, if ID contains CR, LF or NUL, if Type or a comment contains CR or
// LF, or if HasRetry is set and Retry is negative, since such events could
// not be read back unchanged.
func (w *Writer) WriteEvent(ev Event) error {
	if err := validate(&ev); err != nil {
		return err
	}
	bp := bufPool.Get().(*[]byte)
	b := appendEvent((*bp)[:0], &ev)
	err := w.emit(b)
	putBuf(bp, b)
	return err
}

// WriteComment writes a block holding a single comment line with the given
// text, such as a heartbeat that keeps an idle connection open. It returns
// an error wrapping [ErrInvalidField] if text contains CR or LF.
func (w *Writer) WriteComment(text string) error {
	if strings.ContainsAny(text, "\r\n") {
		return fmt.Errorf("%w: comment contains a line break", ErrInvalidField)
	}
	bp := bufPool.Get().(*[]byte)
	b := appendField((*bp)[:0], "", text)
	b = append(b, '\n')
	err := w.emit(b)
	putBuf(bp, b)
	return err
}

// emit writes one complete block and flushes it.
func (w *Writer) emit(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("sse: write: %w", err)
	}
	switch {
	case w.flushE != nil:
		if err := w.flushE.Flush(); err != nil {
			return fmt.Errorf("sse: flush: %w", err)
		}
	case w.flush != nil:
		w.flush.Flush()
	}
	return nil
}

// putBuf returns a buffer to the pool unless it has grown too large.
func putBuf(bp *[]byte, b []byte) {
	if cap(b) > maxPooledBuf {
		return
	}
	*bp = b[:0]
	bufPool.Put(bp)
}

// validate reports fields of ev that cannot round-trip.
func validate(ev *Event) error {
	if strings.ContainsAny(ev.ID, "\r\n\x00") {
		return fmt.Errorf("%w: id contains CR, LF or NUL", ErrInvalidField)
	}
	if strings.ContainsAny(ev.Type, "\r\n") {
		return fmt.Errorf("%w: event type contains a line break", ErrInvalidField)
	}
	for _, c := range ev.Comments {
		if strings.ContainsAny(c, "\r\n") {
			return fmt.Errorf("%w: comment contains a line break", ErrInvalidField)
		}
	}
	if ev.HasRetry && ev.Retry < 0 {
		return fmt.Errorf("%w: negative retry", ErrInvalidField)
	}
	return nil
}

// appendEvent appends the wire form of ev, including the final blank line.
func appendEvent(b []byte, ev *Event) []byte {
	for _, c := range ev.Comments {
		b = appendField(b, "", c)
	}
	if ev.HasID || ev.ID != "" {
		b = appendField(b, "id", ev.ID)
	}
	if ev.Type != "" {
		b = appendField(b, "event", ev.Type)
	}
	if ev.HasRetry {
		b = append(b, "retry: "...)
		b = strconv.AppendInt(b, int64(ev.Retry), 10)
		b = append(b, '\n')
	}
	if ev.HasData || ev.Data != "" {
		data := ev.Data
		for {
			i := indexEOLString(data)
			if i < 0 {
				b = appendField(b, "data", data)
				break
			}
			b = appendField(b, "data", data[:i])
			if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			data = data[i+1:]
		}
	}
	return append(b, '\n')
}

// appendField appends "name: value\n", or "name:\n" when value is empty.
// An empty name yields a comment line.
func appendField(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, ':')
	if value != "" {
		b = append(b, ' ')
		b = append(b, value...)
	}
	return append(b, '\n')
}

// indexEOLString returns the index of the first CR or LF in s, or -1.
func indexEOLString(s string) int {
	i := strings.IndexByte(s, '\n')
	head := s
	if i >= 0 {
		head = s[:i]
	}
	if j := strings.IndexByte(head, '\r'); j >= 0 {
		return j
	}
	return i
}
