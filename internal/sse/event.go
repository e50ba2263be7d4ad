// Package sse reads and writes Server-Sent Events, the text/event-stream
// format defined by the WHATWG HTML standard.
//
// mcphub uses it on both sides of the wire: [Reader] parses the event
// streams of upstream MCP servers (Streamable HTTP and the legacy HTTP+SSE
// transport), and [Writer] produces the event stream of mcphub's own
// Streamable HTTP endpoint.
//
// Unlike a browser EventSource, the package is lossless: an [Event] records
// every field of a block, including comments, empty data fields (as used by
// priming events), empty ids (which reset the last event id) and retry
// values, so a proxy can forward events without changing their meaning.
//
// The reader follows the standard's parsing rules, never blocks waiting for
// the byte after a CR, and bounds the memory spent on a single event. The
// writer builds each event in a pooled buffer and emits it with one Write
// followed by one flush.
package sse

import "errors"

// DefaultMaxEventSize is the event size limit, in bytes, that [NewReader]
// uses when it is given a limit of zero or less.
const DefaultMaxEventSize = 16 << 20

// ErrEventTooLarge is wrapped by the error that [Reader.Next] returns when
// the lines of one event add up to more than the reader's size limit.
var ErrEventTooLarge = errors.New("sse: event too large")

// ErrInvalidField is wrapped by the error that [Writer] returns when an
// event holds a value that cannot be written so that it reads back
// unchanged, such as an id containing a line break.
var ErrInvalidField = errors.New("sse: invalid field")

// Event is one block of an event stream, with every field it carried.
//
// Type, ID, Data and Comments hold field values exactly as they appeared,
// after removal of the single optional space that follows the colon.
type Event struct {
	// Type is the value of the "event" field; "" means the default type
	// "message".
	Type string
	// Data holds the values of all "data" fields joined with "\n", without
	// a trailing newline.
	Data string
	// HasData reports whether a "data" field was present. A priming event
	// ("id: x" followed by an empty "data:") has HasData set and Data empty.
	HasData bool
	// ID is the value of the "id" field.
	ID string
	// HasID reports whether an "id" field was present. An empty id with
	// HasID set resets the last event id.
	HasID bool
	// Retry is the reconnection time in milliseconds; it is valid only
	// when HasRetry is set.
	Retry int
	// HasRetry reports whether a valid "retry" field was present.
	HasRetry bool
	// Comments holds the text of the comment lines, in order, without the
	// leading ':' and without one optional space after it.
	Comments []string
}

// bom is the UTF-8 byte order mark that may start a stream.
const bom = "\xEF\xBB\xBF"

// trimSpace1 removes one leading space from b, if there is one.
func trimSpace1(b []byte) []byte {
	if len(b) > 0 && b[0] == ' ' {
		return b[1:]
	}
	return b
}
