package sse

import (
	"io"
	"math"
	"testing"
)

// benchEvent is a typical MCP notification as the hub forwards it.
var benchEvent = Event{
	ID:      "3f6c1a2b-0001",
	HasID:   true,
	Type:    "message",
	Data:    `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-17","progress":42,"total":100,"message":"indexing files"}}`,
	HasData: true,
}

func BenchmarkWriteEvent(b *testing.B) {
	w := NewWriter(io.Discard)
	wire := appendEvent(nil, &benchEvent)
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if err := w.WriteEvent(benchEvent); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadEvent(b *testing.B) {
	wire := appendEvent(nil, &benchEvent)
	r := NewReader(&repeatSource{pat: wire, limit: math.MaxInt64}, 0)
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		ev, err := r.Next()
		if err != nil || len(ev.Data) != len(benchEvent.Data) {
			b.Fatal(ev, err)
		}
	}
}
