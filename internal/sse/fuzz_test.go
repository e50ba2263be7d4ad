package sse

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// FuzzReader feeds arbitrary bytes to the reader with an arbitrary size
// limit. It checks that the reader never panics, that every event fits the
// limit, that the stream always ends in io.EOF or ErrEventTooLarge, that
// reading one byte at a time gives the same result, and that the result
// matches the simple reference parser.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"", "data: a\n\n", "data: a\r\n\r\n", "data: a\r\r", bom + "data: a",
		"id: 1\ndata:\n\n", "retry: 10\nretry: x\n\n", ": c\n:d\nfoo\n\n",
		"id: a\x00b\n\n", "data\ndata\r\ndata: x\r", "\xEF\xBB", "\r\n\r\n\n",
		"event: e\ndata: 1\ndata: 2\n\ndata: 3",
	} {
		f.Add([]byte(s), 0)
		f.Add([]byte(s), 5)
	}
	f.Fuzz(func(t *testing.T, data []byte, maxSize int) {
		limit := maxSize % 1024
		eff := limit
		if eff <= 0 {
			eff = DefaultMaxEventSize
		}
		whole, errW := readAll(NewReader(bytes.NewReader(data), limit))
		if errW != io.EOF && !errors.Is(errW, ErrEventTooLarge) {
			t.Fatalf("unexpected error %v", errW)
		}
		if len(whole) > len(data) {
			t.Fatalf("%d events from %d bytes", len(whole), len(data))
		}
		for _, ev := range whole {
			if n := eventSize(ev); n > eff {
				t.Fatalf("event of %d bytes with a %d-byte limit: %#v", n, eff, ev)
			}
		}
		one, errO := readAll(NewReader(iotest.OneByteReader(bytes.NewReader(data)), limit))
		if !sameError(errW, errO) || !equalEvents(whole, one) {
			t.Fatalf("chunking changes the result:\nwhole: %#v, %v\n  one: %#v, %v", whole, errW, one, errO)
		}
		ref, errR := refParse(string(data), eff)
		if !sameError(errW, errR) || !equalEvents(whole, ref) {
			t.Fatalf("reference parser disagrees:\n got: %#v, %v\n ref: %#v, %v", whole, errW, ref, errR)
		}
	})
}

// FuzzRoundTrip feeds fuzzed field values to the writer. Whatever the writer
// accepts must read back as the same event; whatever it rejects must hold a
// value that cannot round-trip.
func FuzzRoundTrip(f *testing.F) {
	f.Add("", "hello", "", 0, uint8(0), "", "")
	f.Add("message", "a\nb\r\nc\rd", "42", 3000, uint8(0b1111), "c1", " c2")
	f.Add("", "", "", 0, uint8(0b0011), "", "")
	f.Add("t", "\n", "id\x00", -5, uint8(0b0100), "x\ny", "")
	f.Add(" sp", " data ", " ", 1<<40, uint8(0b1110), ":", bom)
	f.Fuzz(func(t *testing.T, typ, data, id string, retry int, flags uint8, c1, c2 string) {
		ev := Event{
			Type:     typ,
			Data:     data,
			HasData:  flags&1 != 0,
			ID:       id,
			HasID:    flags&2 != 0,
			Retry:    retry,
			HasRetry: flags&4 != 0,
		}
		switch flags >> 3 & 3 {
		case 1:
			ev.Comments = []string{c1}
		case 2, 3:
			ev.Comments = []string{c1, c2}
		}
		var buf bytes.Buffer
		if err := NewWriter(&buf).WriteEvent(ev); err != nil {
			if !errors.Is(err, ErrInvalidField) || buf.Len() != 0 {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		checkRoundTrip(t, ev, buf.Bytes())
	})
}
