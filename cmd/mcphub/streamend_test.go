package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// A GET stream whose session ends (its client sends DELETE) ends as a
// whole HTTP response: its last chunk is written, so the client, or a
// proxy in front of the hub, sees the stream close rather than a cut
// connection.
func TestStreamOfAnEndedSessionClosesCleanly(t *testing.T) {
	up := startUpstream(t, "up", upstreamOpts{})
	base := startInproc(t, remoteServer("up", up.url, ""), hubConfig{store: fullStore}).url
	s, _ := newRawClient(t, base).initialize("/mcp")
	resp, err := s.get(context.Background(), "")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", resp, err)
	}
	defer resp.Body.Close()
	stream := follow(resp.Body)
	stream.await(t, 10*time.Second, "the priming event", func(sseEvent) bool { return true })
	if code := s.delete(); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	stream.drain(10 * time.Second)
	if !errors.Is(stream.err, io.EOF) {
		t.Errorf("the stream of the ended session ended with %v, want a clean end of the response (io.EOF)", stream.err)
	}
}
