package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

const (
	// readBufSize is the size of the chunk buffer the reader reads into.
	readBufSize = 4096
	// maxEmptyReads is how many (0, nil) reads in a row are tolerated
	// before the reader gives up with io.ErrNoProgress.
	maxEmptyReads = 100
	// keepCap is the largest buffer capacity kept between events; bigger
	// buffers are released so one huge event does not pin its memory.
	keepCap = 64 << 10
)

// readBufPool holds chunk buffers of released readers: a client reads one
// short stream per call, and a fresh 4 KiB buffer each time was a third of
// what the hub allocated per call.
var readBufPool = sync.Pool{New: func() any {
	b := make([]byte, readBufSize)
	return &b
}}

// errReleased is what Next returns after Release.
var errReleased = errors.New("sse: reader released")

// errInvalidRead reports an underlying reader that returned an impossible
// byte count.
var errInvalidRead = errors.New("invalid count returned by Read")

// tooLargeError is the error returned for an event over the size limit.
type tooLargeError struct{ limit int }

func (e *tooLargeError) Error() string {
	return "sse: event exceeds " + strconv.Itoa(e.limit) + " bytes"
}

func (e *tooLargeError) Unwrap() error { return ErrEventTooLarge }

// Reader parses an event stream into [Event] values.
//
// A Reader is not safe for concurrent use. Once Next has returned an error,
// every later call returns the same error.
type Reader struct {
	src io.Reader
	max int

	buf    []byte // chunk buffer; buf[r:w] is read but not yet parsed
	r, w   int
	srcErr error // error from src, handled once buf is drained
	fail   error // sticky error returned by Next

	bomDone bool // the start of the stream has been checked for a BOM
	skipLF  bool // the last line ended in CR; skip one LF that follows
	line    []byte

	// State of the block being parsed.
	any      bool // the block has at least one field or comment line
	size     int  // bytes of the block's lines, excluding line endings
	typ      []byte
	id       []byte
	data     []byte // data values, each followed by '\n'
	hasID    bool
	hasData  bool
	hasRetry bool
	retry    int
	comments []string

	lastID string
}

// NewReader returns a Reader that parses the event stream read from r.
//
// maxEventSize bounds the total size, in bytes, of the lines of one event,
// not counting line endings; zero or less means [DefaultMaxEventSize]. The
// memory a Reader holds is proportional to this limit.
func NewReader(r io.Reader, maxEventSize int) *Reader {
	if maxEventSize <= 0 {
		maxEventSize = DefaultMaxEventSize
	}
	return &Reader{src: r, max: maxEventSize, buf: *readBufPool.Get().(*[]byte)}
}

// Release gives the reader's buffer back for later readers. The events
// Next returned stay valid (they hold copies); Next itself fails from now
// on. Release is optional and safe to call more than once.
func (r *Reader) Release() {
	if r.buf == nil {
		return
	}
	b := r.buf[:readBufSize]
	r.buf, r.r, r.w = nil, 0, 0
	readBufPool.Put(&b)
	if r.fail == nil {
		r.fail = errReleased
	}
}

// LastEventID returns the id of the most recent event returned by Next that
// had an id field, or "" if there was none. An empty id field resets it to
// "", as the standard prescribes. It is the value to send as Last-Event-ID
// when resuming the stream.
func (r *Reader) LastEventID() string { return r.lastID }

// Next returns the next block of the stream that has at least one field or
// comment line; blank lines alone produce nothing. Such a block is returned
// even if all its fields were ignored, in which case the Event is empty.
//
// Next returns as soon as the blank line that ends a block has been read,
// without waiting for more input. A final block that is not followed by a
// blank line is returned when the stream ends. At the end of the stream Next
// returns io.EOF. If the underlying reader fails, Next returns an error
// wrapping that failure, and a block that was not complete is discarded. A
// block larger than the reader's limit yields an error wrapping
// [ErrEventTooLarge].
func (r *Reader) Next() (Event, error) {
	if r.fail != nil {
		return Event{}, r.fail
	}
	if !r.bomDone {
		r.skipBOM()
	}
	for {
		for r.r < r.w {
			if r.skipLF {
				r.skipLF = false
				if r.buf[r.r] == '\n' {
					r.r++
					continue
				}
			}
			chunk := r.buf[r.r:r.w]
			i := indexEOL(chunk)
			if i < 0 {
				// An unfinished line: keep it and read more.
				if err := r.account(len(chunk)); err != nil {
					return Event{}, err
				}
				r.line = append(r.grow(r.line, len(chunk)), chunk...)
				r.r = r.w
				break
			}
			if err := r.account(i); err != nil {
				return Event{}, err
			}
			line := chunk[:i]
			if len(r.line) > 0 {
				r.line = append(r.grow(r.line, len(line)), line...)
				line = r.line
			}
			r.skipLF = chunk[i] == '\r'
			r.r += i + 1
			ev, ok := r.processLine(line)
			r.line = r.line[:0]
			if ok {
				return ev, nil
			}
		}
		if r.srcErr != nil {
			return r.finish()
		}
		r.fill()
	}
}

// finish handles the end of the input once the buffer is drained.
func (r *Reader) finish() (Event, error) {
	if r.srcErr == io.EOF {
		if len(r.line) > 0 {
			r.processLine(r.line) // never dispatches: the line is not blank
			r.line = r.line[:0]
		}
		if r.any {
			return r.dispatch(), nil
		}
		r.fail = io.EOF
	} else {
		r.fail = fmt.Errorf("sse: read: %w", r.srcErr)
	}
	r.release()
	return Event{}, r.fail
}

// account adds n bytes to the size of the current block, failing if that
// exceeds the limit.
func (r *Reader) account(n int) error {
	if n > r.max-r.size {
		r.fail = &tooLargeError{limit: r.max}
		r.release()
		return r.fail
	}
	r.size += n
	return nil
}

// grow makes room for n more bytes in b. It grows by doubling, but never
// beyond what the size limit allows, so a block's buffers stay within the
// bound.
func (r *Reader) grow(b []byte, n int) []byte {
	need := len(b) + n
	if need <= cap(b) {
		return b
	}
	c := max(min(max(2*cap(b), 256), r.max), need)
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}

// processLine interprets one line. It returns an event, and true, when the
// line is blank and ends a non-empty block.
func (r *Reader) processLine(line []byte) (Event, bool) {
	if len(line) == 0 {
		if !r.any {
			return Event{}, false
		}
		return r.dispatch(), true
	}
	r.any = true
	if line[0] == ':' {
		r.comments = append(r.comments, string(trimSpace1(line[1:])))
		return Event{}, false
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], trimSpace1(line[i+1:])
	}
	switch string(name) {
	case "event":
		r.typ = append(r.typ[:0], value...)
	case "data":
		r.data = append(append(r.grow(r.data, len(value)+1), value...), '\n')
		r.hasData = true
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.id = append(r.id[:0], value...)
			r.hasID = true
		}
	case "retry":
		if n, ok := parseRetry(value); ok {
			r.retry, r.hasRetry = n, true
		}
	}
	return Event{}, false
}

// parseRetry parses a retry value, which must be non-empty ASCII digits.
// Values that overflow an int are rejected.
func parseRetry(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int(c - '0')
		if n > (maxInt-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

const maxInt = int(^uint(0) >> 1)

// dispatch turns the current block into an Event and resets the block.
func (r *Reader) dispatch() Event {
	ev := Event{
		Type:     r.typeString(),
		HasData:  r.hasData,
		HasID:    r.hasID,
		Retry:    r.retry,
		HasRetry: r.hasRetry,
		Comments: r.comments,
	}
	if r.hasData {
		ev.Data = string(r.data[:len(r.data)-1])
	}
	if r.hasID {
		ev.ID = string(r.id)
		r.lastID = ev.ID
	}
	r.any, r.hasID, r.hasData, r.hasRetry = false, false, false, false
	r.size, r.retry, r.comments = 0, 0, nil
	r.typ, r.id, r.data = shrink(r.typ), shrink(r.id), shrink(r.data)
	r.line = shrink(r.line)
	return ev
}

// typeString returns the event type, without allocating for the common
// type "message".
func (r *Reader) typeString() string {
	if string(r.typ) == "message" {
		return "message"
	}
	return string(r.typ)
}

// release drops all block state after a terminal error.
func (r *Reader) release() {
	r.line, r.typ, r.id, r.data, r.comments = nil, nil, nil, nil, nil
}

// shrink empties b, releasing it if it has grown large.
func shrink(b []byte) []byte {
	if cap(b) > keepCap {
		return nil
	}
	return b[:0]
}

// skipBOM skips a single UTF-8 byte order mark at the start of the stream.
// It reads more only while the bytes seen so far are a prefix of the mark.
func (r *Reader) skipBOM() {
	for {
		avail := r.buf[r.r:r.w]
		n := min(len(avail), len(bom))
		if string(avail[:n]) != bom[:n] {
			break
		}
		if n == len(bom) {
			r.r += n
			break
		}
		if r.srcErr != nil {
			break
		}
		r.fill()
	}
	r.bomDone = true
}

// fill reads more input into the buffer, recording any error in srcErr. It
// returns after the first read that yields data or an error.
func (r *Reader) fill() {
	if r.r > 0 {
		copy(r.buf, r.buf[r.r:r.w])
		r.w -= r.r
		r.r = 0
	}
	for range maxEmptyReads {
		n, err := r.src.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			r.srcErr = errInvalidRead
			return
		}
		r.w += n
		if err != nil {
			r.srcErr = err
			return
		}
		if n > 0 {
			return
		}
	}
	r.srcErr = io.ErrNoProgress
}

// indexEOL returns the index of the first CR or LF in b, or -1.
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	head := b
	if i >= 0 {
		head = b[:i]
	}
	if j := bytes.IndexByte(head, '\r'); j >= 0 {
		return j
	}
	return i
}
