package sse

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// repeatSource endlessly repeats a pattern, up to limit bytes, and counts
// what has been read.
type repeatSource struct {
	pat   []byte
	off   int
	n     int64
	limit int64
}

func (s *repeatSource) Read(p []byte) (int, error) {
	if s.n >= s.limit {
		return 0, io.EOF
	}
	if rem := s.limit - s.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	n := 0
	for n < len(p) {
		c := copy(p[n:], s.pat[s.off:])
		n += c
		s.off = (s.off + c) % len(s.pat)
	}
	s.n += int64(n)
	return n, nil
}

// TestReaderMemoryBound feeds blocks far larger than the limit and checks
// that the reader stops reading shortly after the limit and that the memory
// it allocates stays proportional to the limit.
func TestReaderMemoryBound(t *testing.T) {
	const limit = 1 << 20
	tests := []struct {
		name   string
		prefix string
		pat    string
	}{
		{"one endless line", "data: ", "a"},
		{"endless data lines", "", "data: " + string(make([]byte, 1000)) + "\n"},
		{"endless CR data lines", "", "data:xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r"},
		{"endless comments", "", ": " + string(make([]byte, 200)) + "\n"},
		{"endless ids", "", "id: 0123456789abcdef0123456789abcdef\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &repeatSource{pat: []byte(tt.pat), limit: 64 * limit}
			r := NewReader(io.MultiReader(strings.NewReader(tt.prefix), src), limit)
			checkBound(t, r, src, limit)
		})
	}
}

func checkBound(t *testing.T, r *Reader, src *repeatSource, limit int) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := r.Next()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
	// Line endings are not counted, and a counted line holds at least one
	// byte for at most two bytes of CRLF, so at most 3*limit is consumed.
	if read := src.n; read > int64(3*limit+2*readBufSize) {
		t.Errorf("read %d bytes from the source for a %d-byte limit", read, limit)
	}
	// Buffers grow by doubling, capped at the limit: the sum of all the
	// buffers ever allocated stays below 4*limit.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(4*limit) {
		t.Errorf("allocated %d bytes for a %d-byte limit", alloc, limit)
	}
}

// TestReaderReleasesLargeBuffers checks that one big event does not pin its
// buffers for the life of the stream.
func TestReaderReleasesLargeBuffers(t *testing.T) {
	big := "data: " + string(make([]byte, 4*keepCap)) + "\n\n"
	r := NewReader(&repeatSource{pat: []byte(big), limit: int64(len(big))}, 0)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if cap(r.data) > keepCap || cap(r.line) > keepCap {
		t.Fatalf("buffers kept: data %d, line %d", cap(r.data), cap(r.line))
	}
}
