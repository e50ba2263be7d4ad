package sse

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// pieces are the building blocks of random field values: plain text, the
// characters that matter to the format, and some that merely look tricky.
var pieces = []string{
	"a", "b", "xyz", " ", "  ", ":", ": ", "\t", "\r", "\n", "\r\n", "\n\r",
	"\x00", "é", "😀", bom, "\xff", "data: ", "id:", "event", "retry: 1", "0",
}

// randString builds a string from up to n random pieces, leaving out any
// piece that contains a character of banned.
func randString(rng *rand.Rand, n int, banned string) string {
	var sb strings.Builder
	for range rng.IntN(n + 1) {
		p := pieces[rng.IntN(len(pieces))]
		if !strings.ContainsAny(p, banned) {
			sb.WriteString(p)
		}
	}
	return sb.String()
}

// randEvent returns a random event; with valid set it only uses values the
// writer accepts.
func randEvent(rng *rand.Rand, valid bool) Event {
	idBan, lineBan := "\r\n\x00", "\r\n"
	if !valid {
		idBan, lineBan = "", ""
	}
	ev := Event{
		HasData: rng.IntN(2) == 0,
		HasID:   rng.IntN(2) == 0,
	}
	if rng.IntN(3) > 0 {
		ev.Data = randString(rng, 8, "")
	}
	if rng.IntN(2) == 0 {
		ev.ID = randString(rng, 4, idBan)
	}
	if rng.IntN(2) == 0 {
		ev.Type = randString(rng, 4, lineBan)
	}
	if rng.IntN(3) == 0 {
		ev.HasRetry = true
		ev.Retry = rng.IntN(1 << 20)
		if rng.IntN(20) == 0 {
			ev.Retry = int(rng.Int64())
		}
		if !valid && rng.IntN(4) == 0 {
			ev.Retry = -ev.Retry - 1
		}
	} else {
		ev.Retry = rng.IntN(10) // ignored without HasRetry
	}
	for range rng.IntN(3) {
		ev.Comments = append(ev.Comments, randString(rng, 3, lineBan))
	}
	return ev
}

// TestRoundTripProperty writes many random events, one stream each and all
// in one stream, and checks that the reader returns what was written.
func TestRoundTripProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var stream bytes.Buffer
	sw := NewWriter(&stream)
	var want []Event
	for i := range 20000 {
		ev := randEvent(rng, true)
		var buf bytes.Buffer
		if err := NewWriter(&buf).WriteEvent(ev); err != nil {
			t.Fatalf("event %d %#v: %v", i, ev, err)
		}
		checkRoundTrip(t, ev, buf.Bytes())
		if err := sw.WriteEvent(ev); err != nil {
			t.Fatal(err)
		}
		if !isEmpty(ev) {
			want = append(want, normalize(ev))
		}
	}
	for name, src := range map[string]io.Reader{
		"whole":   bytes.NewReader(stream.Bytes()),
		"onebyte": iotest.OneByteReader(bytes.NewReader(stream.Bytes())),
	} {
		got, err := readAll(NewReader(src, 0))
		if err != io.EOF || !equalEvents(got, want) {
			t.Fatalf("%s: stream round trip failed (%d of %d events, err %v)", name, len(got), len(want), err)
		}
	}
}

// TestRoundTripRejects checks that random events the writer rejects really
// hold a value that cannot round-trip, and that all others round-trip.
func TestRoundTripRejects(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rejected := 0
	for range 20000 {
		ev := randEvent(rng, false)
		var buf bytes.Buffer
		err := NewWriter(&buf).WriteEvent(ev)
		if err != nil {
			if !errors.Is(err, ErrInvalidField) || validate(&ev) == nil || buf.Len() != 0 {
				t.Fatalf("unexpected rejection of %#v: %v", ev, err)
			}
			rejected++
			continue
		}
		checkRoundTrip(t, ev, buf.Bytes())
	}
	if rejected == 0 {
		t.Fatal("no event was rejected; the generator is too tame")
	}
}

// checkRoundTrip reads wire back and compares it with the event written.
func checkRoundTrip(t testing.TB, ev Event, wire []byte) {
	t.Helper()
	r := NewReader(bytes.NewReader(wire), 0)
	got, err := r.Next()
	if isEmpty(ev) {
		if err != io.EOF {
			t.Fatalf("empty event %#v read back as %#v, %v", ev, got, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("reading %q: %v", wire, err)
	}
	if want := normalize(ev); !reflect.DeepEqual(normalize(got), want) {
		t.Fatalf("round trip mismatch for %q\n got: %#v\nwant: %#v", wire, got, want)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("extra data after event %q: %v", wire, err)
	}
	if ev.HasID || ev.ID != "" {
		if r.LastEventID() != ev.ID {
			t.Fatalf("LastEventID = %q, want %q", r.LastEventID(), ev.ID)
		}
	}
}
