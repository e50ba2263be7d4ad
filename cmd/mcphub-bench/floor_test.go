package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// exchange is one request a test client sends over a kept-alive connection,
// and the pieces its response body must arrive in.
type exchange struct {
	method, path string
	body         string
	chunked      bool     // send the request body chunked rather than with a Content-Length
	pieces       []string // the body, in the pieces the upstream writes it
}

// exchanges cover every framing the upstream answers with: a Content-Length
// body in one piece, and in two with the second held back until the first
// has reached the client; a chunked SSE stream written and flushed event by
// event, each held back until the one before has reached the client; and
// empty responses. Requests come with a Content-Length, chunked, and with
// no body.
var exchanges = []exchange{
	{method: "POST", path: "/length", body: "a", pieces: []string{"session not found: a\n"}},
	{method: "POST", path: "/stream", body: "b", pieces: []string{"data: 0 b\n\n", "data: 1 b\n\n", "data: 2 b\n\n"}},
	{method: "POST", path: "/empty"},
	{method: "POST", path: "/late", body: "d", pieces: []string{"late ", "d"}},
	{method: "POST", path: "/length", body: "c", chunked: true, pieces: []string{"session not found: c\n"}},
	{method: "GET", path: "/empty"},
}

// framingUpstream answers the exchanges' paths and records each request as
// it arrived. next releases the next held-back piece of a response body.
type framingUpstream struct {
	next chan struct{}
	mu   sync.Mutex
	seen []string
}

func (u *framingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.seen = append(u.seen, fmt.Sprintf("%s %s host=%s length=%d chunked=%v header=%v body=%q",
		r.Method, r.URL.RequestURI(), r.Host, r.ContentLength, r.TransferEncoding, r.Header, body))
	u.mu.Unlock()
	// held waits until the client has the piece before; it is false when
	// the request has gone.
	held := func() bool {
		select {
		case <-u.next:
			return true
		case <-r.Context().Done():
			return false
		}
	}
	switch r.URL.Path {
	case "/length":
		http.Error(w, "session not found: "+string(body), http.StatusNotFound)
	case "/stream":
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Mcp-Session-Id", "s1")
		for i := range 3 {
			if i > 0 && !held() {
				return
			}
			fmt.Fprintf(w, "data: %d %s\n\n", i, body)
			w.(http.Flusher).Flush()
		}
	case "/empty":
		w.WriteHeader(http.StatusAccepted)
	case "/late":
		w.Header().Set("Content-Length", fmt.Sprint(len("late ")+len(body)))
		w.Header()["Content-Type"] = nil // no type, and none sniffed
		io.WriteString(w, "late ")
		w.(http.Flusher).Flush()
		if held() {
			w.Write(body)
		}
	}
}

// TestFloorsPassMessagesUnchanged runs the exchanges over one kept-alive
// connection straight to the upstream, then through each floor, and
// requires that the upstream sees the same requests and the client the
// same responses (status, headers, framing and body) every way. A floor
// that held back any part of a body until the upstream had sent more of it
// (a stream buffered until its end) leaves the client waiting for a piece
// the upstream only sends once the client has it, and fails.
func TestFloorsPassMessagesUnchanged(t *testing.T) {
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &framingUpstream{next: make(chan struct{})}
	srv := &http.Server{Handler: up}
	go srv.Serve(upLn)
	defer srv.Close()

	run := func(t *testing.T, addr string) (requests, responses []string) {
		up.mu.Lock()
		up.seen = nil
		up.mu.Unlock()
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		deadline := time.Now().Add(5 * time.Second)
		nc.SetDeadline(deadline)
		br := bufio.NewReader(nc)
		for _, x := range exchanges {
			responses = append(responses, x.send(t, nc, br, up.next, deadline))
		}
		up.mu.Lock()
		defer up.mu.Unlock()
		return up.seen, responses
	}

	wantReq, wantResp := run(t, upLn.Addr().String())
	for _, mode := range []string{"relay", "http-proxy"} {
		t.Run(mode, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- serveFloor(mode, ln, upLn.Addr().String()) }()
			defer func() {
				ln.Close()
				<-done
			}()
			gotReq, gotResp := run(t, ln.Addr().String())
			for i := range exchanges {
				if gotReq[i] != wantReq[i] {
					t.Errorf("the upstream saw\n%s\nwant, as sent straight to it,\n%s", gotReq[i], wantReq[i])
				}
				if gotResp[i] != wantResp[i] {
					t.Errorf("the client got\n%s\nwant, as sent straight from the upstream,\n%s", gotResp[i], wantResp[i])
				}
			}
		})
	}
}

// send writes the exchange's request on nc and reads its response from br,
// piece by piece: each piece must arrive before the upstream is let to
// send the next (through next). It returns what the client got, and fails
// the test if that has not happened by deadline.
func (x exchange) send(t *testing.T, nc net.Conn, br *bufio.Reader, next chan<- struct{}, deadline time.Time) string {
	t.Helper()
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: up\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: s1\r\n", x.method, x.path)
	switch {
	case x.chunked:
		fmt.Fprintf(nc, "%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", head, len(x.body), x.body)
	case x.method == "GET":
		fmt.Fprintf(nc, "%s\r\n", head)
	default:
		fmt.Fprintf(nc, "%sContent-Length: %d\r\n\r\n%s", head, len(x.body), x.body)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", x.method, x.path, err)
	}
	defer resp.Body.Close()
	var got strings.Builder
	for i, want := range x.pieces {
		b := make([]byte, len(want))
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			t.Fatalf("%s %s: piece %d of the body: %v (got %q before it)", x.method, x.path, i, err, got.String())
		}
		got.Write(b)
		if i < len(x.pieces)-1 {
			select {
			case next <- struct{}{}:
			case <-time.After(time.Until(deadline)):
				t.Fatalf("%s %s: the upstream stopped waiting to send piece %d", x.method, x.path, i+1)
			}
		}
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: the end of the body: %v", x.method, x.path, err)
	}
	got.Write(rest)
	h := resp.Header.Clone()
	h.Del("Date") // the clock's, not the floor's
	// fmt prints a map with its keys sorted.
	return fmt.Sprintf("%d length=%d chunked=%v header=%v body=%q",
		resp.StatusCode, resp.ContentLength, resp.TransferEncoding, h, got.String())
}
