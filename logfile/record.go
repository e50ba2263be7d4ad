package logfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Record is one JSON line of the log: slog's time, level and message, the
// server it is about, and its other attributes in order, groups flattened
// to group.key. A reader filters records by Server and Time, and prints
// them with Format.
type Record struct {
	Time     time.Time // zero when the line has no time that parses
	TimeText string    // a time that does not parse, as written
	Level    string
	Msg      string
	Server   string // "" for the hub's own records
	Attrs    []Attr
}

// Attr is one of a record's other attributes, its value as text: a
// string unquoted, null as <nil>, anything else as compact JSON.
type Attr struct{ Key, Value string }

// ParseRecord reads one line of the log as a JSON object; ok is false for
// anything else (a line a server wrote that is not JSON), which a reader
// shows as it is.
func ParseRecord(line []byte) (rec *Record, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, false
	}
	rec = &Record{}
	if err := rec.readObject(line, ""); err != nil {
		return nil, false
	}
	return rec, true
}

// readObject reads the JSON object data, whose keys are named under
// prefix; the record's own fields are the top level's.
func (r *Record) readObject(data []byte, prefix string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		if prefix == "" && !seen[key] && raw[0] == '"' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			if r.setField(key, s) {
				seen[key] = true
				continue
			}
		}
		if raw[0] == '{' {
			if err := r.readObject(raw, prefix+key+"."); err != nil {
				return err
			}
			continue
		}
		r.Attrs = append(r.Attrs, Attr{Key: prefix + key, Value: renderJSONValue(raw)})
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

// setField sets one of the record's own fields, reporting whether key is
// one.
func (r *Record) setField(key, s string) bool {
	switch key {
	case "time":
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			r.Time = t
		} else {
			r.TimeText = s
		}
	case "level":
		r.Level = s
	case "msg":
		r.Msg = s
	case "server":
		r.Server = s
	default:
		return false
	}
	return true
}

// renderJSONValue is a JSON value as an attribute's text: a string
// unquoted, null as <nil>, anything else as compact JSON.
func renderJSONValue(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case 'n':
		return "<nil>"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// Format renders the record on one line for a terminal: its time in UTC
// to the millisecond, its level, the server column (width wide, absent
// when width is 0: no record printed has a server), its message and its
// attributes as key=value, quoted where needed. Control characters are
// escaped, so that a server's output cannot break the line or drive the
// terminal.
func (r *Record) Format(width int) string {
	var b strings.Builder
	switch {
	case !r.Time.IsZero():
		b.WriteString(r.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00") + " ")
	case r.TimeText != "":
		b.WriteString(escapeControls(r.TimeText) + " ")
	}
	fmt.Fprintf(&b, "%-5s ", escapeControls(r.Level))
	if width > 0 {
		fmt.Fprintf(&b, "%-*s  ", width, escapeControls(r.Server))
	}
	b.WriteString(escapeControls(r.Msg))
	for _, a := range r.Attrs {
		b.WriteString(" " + quoteLogValue(a.Key) + "=" + quoteLogValue(a.Value))
	}
	return b.String()
}

// escapeControls writes the control characters of s, but tabs, as Go
// escapes (\n, \x1b), so that a record stays on one line and a server's
// terminal sequences are shown, not obeyed.
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, isEscaped) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isEscaped(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isEscaped(r rune) bool { return unicode.IsControl(r) && r != '\t' }

// quoteLogValue quotes s, as slog's text handler does, when it is empty or
// holds a space, '=', '"' or a character that does not print.
func quoteLogValue(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r == '=' || r == '"' || !unicode.IsPrint(r)
	}) {
		return s
	}
	return strconv.Quote(s)
}
