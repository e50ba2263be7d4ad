package httpserve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A HEAD response that was flushed has no body, not even a chunked one's
// end, so the next response on the connection parses.
func TestHeadWithFlush(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		w.Write([]byte("body"))
	}), Options{})
	c := dial(t, addr)
	c.send("HEAD / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, body := c.read("HEAD"); resp.StatusCode != 200 || body != "" || len(resp.TransferEncoding) != 0 {
		t.Fatalf("HEAD: status %d, body %q, te %v", resp.StatusCode, body, resp.TransferEncoding)
	}
	if _, body := c.read("GET"); body != "body" {
		t.Fatalf("GET after HEAD: %q", body)
	}
}

// A handler that starts its response before reading the body gets no
// 100 Continue in the middle of it; the connection closes afterwards.
func TestContinueAfterTheResponseBegan(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}), Options{})
	c := dial(t, addr)
	c.send("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	c.send("hello")
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "hello" {
		t.Fatalf("body %q, %v", b, err)
	}
	if !c.closed() {
		t.Fatal("the connection stayed open")
	}
}

// Shutdown keeps to its deadline even when a handler waits for a body
// that never comes: the handler's context ends with http.ErrServerClosed.
func TestShutdownDeadlineEndsWaitingHandlers(t *testing.T) {
	entered := make(chan struct{})
	cause := make(chan error, 1)
	s, addr := start(t, awaitCause(false, entered, cause), Options{})
	c := dial(t, addr)
	c.send("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n") // the body never comes
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-cause; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("the handler's context ended with %v", err)
	}
}

func TestServerOwnsFraming(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "chunked")
		w.Write([]byte("hello"))
	}), Options{})
	c := dial(t, addr)
	c.send(post("/", "") + post("/", ""))
	for range 2 {
		if resp, body := c.read("POST"); body != "hello" || len(resp.TransferEncoding) != 0 {
			t.Fatalf("body %q, te %v", body, resp.TransferEncoding)
		}
	}
}

func TestAbsoluteURIRefused(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), Options{})
	c := dial(t, addr)
	c.send("GET http://127.0.0.1/mcp HTTP/1.1\r\nHost: evil.example\r\n\r\n")
	if resp, _ := c.read("GET"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// Empty lines before a request line are skipped (some clients end a POST
// body with an extra CRLF).
func TestEmptyLinesBeforeARequest(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}), Options{})
	c := dial(t, addr)
	c.send(post("/", "one") + "\r\n" + post("/", "two"))
	for _, want := range []string{"one", "two"} {
		if _, body := c.read("POST"); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
}

// A new connection must send its request within ReadHeaderTimeout, not
// IdleTimeout.
func TestSilentNewConnectionClosesAtHeaderTimeout(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
		Options{ReadHeaderTimeout: 50 * time.Millisecond, IdleTimeout: time.Hour})
	c := dial(t, addr)
	if !c.closed() {
		t.Fatal("a silent new connection stayed open")
	}
}

// Many connections pipelining requests (chunked and sized bodies, writes
// split anywhere, handlers fast and slow, watched after 1 ms) get every
// answer, in order, and none cancelled.
func TestPipelinedLoadWithWatches(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/slow" {
			time.Sleep(time.Duration(rand.IntN(10)) * time.Millisecond)
		}
		if r.URL.Path == "/flush" {
			w.(http.Flusher).Flush()
		}
		if r.Context().Err() != nil {
			w.Write([]byte("cancelled"))
			return
		}
		w.Write(b)
	}), Options{WatchAfter: time.Millisecond})
	const conns, requests = 4, 100
	var wg sync.WaitGroup
	for g := range conns {
		wg.Go(func() {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(60 * time.Second))
			go func() {
				paths := []string{"/", "/slow", "/flush"}
				for i := range requests {
					body := fmt.Sprintf("g%d-%d", g, i)
					req := post(paths[rand.IntN(3)], body)
					if i%3 == 0 {
						req = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", paths[rand.IntN(3)], len(body), body)
					}
					k := rand.IntN(len(req))
					nc.Write([]byte(req[:k]))
					nc.Write([]byte(req[k:]))
				}
			}()
			br := bufio.NewReader(nc)
			for i := range requests {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Errorf("connection %d, response %d: %v", g, i, err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				if want := fmt.Sprintf("g%d-%d", g, i); err != nil || string(b) != want {
					t.Errorf("connection %d, response %d: %q, %v; want %q", g, i, b, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A client still sending a head far over the limit gets its 431 rather
// than a broken connection, every time (net/http's client fails the whole
// request when its write breaks before the answer is read).
func TestHugeHeadGetsItsAnswer(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), Options{MaxHeaderBytes: 1 << 10})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	for i := range 20 {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		req.Header.Set("X-Big", strings.Repeat("y", 1<<20))
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("attempt %d: status %d", i, resp.StatusCode)
		}
	}
}

// TestDateFollowsTheClock: the Date value is kept for its second only.
func TestDateFollowsTheClock(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, at := range []time.Time{t0, t0.Add(400 * time.Millisecond), t0.Add(time.Second), t0.Add(-time.Hour), t0.Add(time.Second)} {
		if got, want := httpDate(at), at.Format(http.TimeFormat); got != want {
			t.Fatalf("httpDate(%v) = %q, want %q", at, got, want)
		}
	}
}

// TestWholeBodyGoesOutAtOnce: a response whose body reaches its declared
// Content-Length is sent while the handler is still running, whether the
// body was small enough to hold or not; the connection then serves the
// next request as usual.
func TestWholeBodyGoesOutAtOnce(t *testing.T) {
	release := make(chan struct{})
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := []byte("done")
		if r.URL.Path == "/big" {
			body = []byte(strings.Repeat("x", 3*holdLimit))
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:1])
		w.Write(body[1:])
		if r.URL.Path != "/next" {
			select { // the client must have the answer by now
			case <-release:
			case <-r.Context().Done():
			}
		}
	}), Options{})
	c := dial(t, addr)
	for _, path := range []string{"/small", "/big"} {
		c.send(post(path, ""))
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, body := c.read("POST")
		if resp.StatusCode != 200 || resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) != 0 {
			t.Fatalf("%s: status %d, length %d of %d, te %v", path, resp.StatusCode, resp.ContentLength, len(body), resp.TransferEncoding)
		}
		release <- struct{}{}
	}
	c.send(post("/next", ""))
	if resp, body := c.read("POST"); resp.StatusCode != 200 || body != "done" {
		t.Fatalf("next: status %d, body %q", resp.StatusCode, body)
	}
}

// As TestExpectContinue's /ignore case, but the handler declares its
// length: the answer must still announce that the connection closes.
func TestExpectIgnoredWithLengthSaysClose(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte("no"))
	}), Options{})
	c := dial(t, addr)
	c.send("POST /ignore HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	resp, _ := c.read("POST")
	closed := c.closed()
	if resp.StatusCode != http.StatusForbidden || !resp.Close {
		t.Fatalf("status %d, Connection: close sent %v, connection closed by server %v", resp.StatusCode, resp.Close, closed)
	}
}
