package sse

import (
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readAll calls Next until it fails and returns the events and the error.
func readAll(r *Reader) ([]Event, error) {
	var evs []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// eventSize is the number of bytes of field values an event holds; it can
// never exceed the size of the lines it was parsed from.
func eventSize(ev Event) int {
	n := len(ev.Type) + len(ev.Data) + len(ev.ID)
	for _, c := range ev.Comments {
		n += len(c)
	}
	return n
}

// normalize returns the event the reader is expected to produce for ev
// after it went through the writer.
func normalize(ev Event) Event {
	ev.Data = strings.ReplaceAll(ev.Data, "\r\n", "\n")
	ev.Data = strings.ReplaceAll(ev.Data, "\r", "\n")
	ev.HasData = ev.HasData || ev.Data != ""
	ev.HasID = ev.HasID || ev.ID != ""
	if !ev.HasRetry {
		ev.Retry = 0
	}
	if len(ev.Comments) == 0 {
		ev.Comments = nil
	}
	return ev
}

// isEmpty reports whether the writer emits nothing but a blank line for ev.
func isEmpty(ev Event) bool {
	return !ev.HasData && ev.Data == "" && !ev.HasID && ev.ID == "" &&
		ev.Type == "" && !ev.HasRetry && len(ev.Comments) == 0
}

// refParse is a deliberately simple, whole-input implementation of the
// parsing rules, used as an oracle for the streaming Reader.
func refParse(in string, limit int) ([]Event, error) {
	in = strings.TrimPrefix(in, bom)
	var lines []string
	for in != "" {
		i := strings.IndexAny(in, "\r\n")
		if i < 0 {
			lines = append(lines, in)
			break
		}
		lines = append(lines, in[:i])
		if strings.HasPrefix(in[i:], "\r\n") {
			i++
		}
		in = in[i+1:]
	}
	lines = append(lines, "") // end of stream dispatches a pending block

	var evs []Event
	var cur Event
	var data []string
	any, size := false, 0
	for _, line := range lines {
		if line == "" {
			if any {
				if cur.HasData {
					cur.Data = strings.Join(data, "\n")
				}
				evs = append(evs, cur)
			}
			cur, data, any, size = Event{}, nil, false, 0
			continue
		}
		size += len(line)
		if size > limit {
			return evs, ErrEventTooLarge
		}
		any = true
		if line[0] == ':' {
			cur.Comments = append(cur.Comments, strings.TrimPrefix(line[1:], " "))
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			cur.Type = value
		case "data":
			data = append(data, value)
			cur.HasData = true
		case "id":
			if !strings.Contains(value, "\x00") {
				cur.ID, cur.HasID = value, true
			}
		case "retry":
			digits := value != "" && strings.Trim(value, "0123456789") == ""
			if n, err := strconv.Atoi(value); digits && err == nil {
				cur.Retry, cur.HasRetry = n, true
			}
		}
	}
	return evs, io.EOF
}

// sameError reports whether two terminal errors are of the same kind.
func sameError(a, b error) bool {
	if errors.Is(a, ErrEventTooLarge) || errors.Is(b, ErrEventTooLarge) {
		return errors.Is(a, ErrEventTooLarge) && errors.Is(b, ErrEventTooLarge)
	}
	return a == b
}

// equalEvents compares event lists, treating nil and empty comment slices
// alike.
func equalEvents(a, b []Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(normalize(a[i]), normalize(b[i])) {
			return false
		}
	}
	return true
}

type nextResult struct {
	ev  Event
	err error
}

// nextAsync runs r.Next in a goroutine and returns its result channel.
func nextAsync(r *Reader) <-chan nextResult {
	ch := make(chan nextResult, 1)
	go func() {
		ev, err := r.Next()
		ch <- nextResult{ev, err}
	}()
	return ch
}

// await waits for a Next result, failing the test if none arrives.
func await(t *testing.T, ch <-chan nextResult) nextResult {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(10 * time.Second):
		t.Fatal("Next blocked waiting for more input")
		return nextResult{}
	}
}
