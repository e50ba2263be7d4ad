package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestFloorsPassResponsesUnchanged sends, through each floor and over one
// kept-alive connection, requests whose answers come framed every way the
// upstream frames them: with a Content-Length (with the head, or after the
// head has reached the client), as a chunked stream written in pieces, and
// empty. Each must arrive as the upstream sent it.
func TestFloorsPassResponsesUnchanged(t *testing.T) {
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	late := make(chan struct{}, 1) // lets /late's body go, once its head is through
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/late":
			w.Header().Set("Content-Length", fmt.Sprint(len(body)+5))
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-late
			fmt.Fprintf(w, "late %s", body)
		case "/length":
			http.Error(w, "session not found: "+string(body), http.StatusNotFound)
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				fmt.Fprintf(w, "data: %d %s\n\n", i, body)
				w.(http.Flusher).Flush()
			}
		case "/empty":
			w.WriteHeader(http.StatusAccepted)
		}
	})}
	go up.Serve(upLn)
	defer up.Close()

	for _, f := range []struct {
		name string
		pass func(c, u net.Conn)
	}{{"relay", relay}, {"http-proxy", httpProxy}} {
		t.Run(f.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- floor(ln, upLn.Addr().String(), f.pass) }()
			defer func() {
				ln.Close()
				<-done
			}()
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(nc)
			for _, c := range []struct {
				path, in string
				status   int
				body     string
			}{
				{"/length", "a", 404, "session not found: a\n"},
				{"/stream", "b", 200, "data: 0 b\n\ndata: 1 b\n\ndata: 2 b\n\n"},
				{"/empty", "", 202, ""},
				{"/late", "d", 200, "late d"},
				{"/length", "c", 404, "session not found: c\n"},
			} {
				fmt.Fprintf(nc, "POST %s HTTP/1.1\r\nHost: up\r\nContent-Length: %d\r\n\r\n%s", c.path, len(c.in), c.in)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("%s: %v", c.path, err)
				}
				if c.path == "/late" {
					late <- struct{}{}
				}
				b, err := io.ReadAll(resp.Body)
				if err != nil || resp.StatusCode != c.status || string(b) != c.body {
					t.Fatalf("%s: status %d, body %q, err %v; want %d %q", c.path, resp.StatusCode, b, err, c.status, c.body)
				}
			}
		})
	}
}
