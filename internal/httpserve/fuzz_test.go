package httpserve

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// FuzzServeConn feeds arbitrary bytes to a connection. Whatever they are,
// the connection must end once the client's side is closed, and whatever
// the server wrote must begin as an HTTP/1.1 response.
func FuzzServeConn(f *testing.F) {
	for _, seed := range []string{
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
		"GET /flush HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
		"HEAD / HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	s := New(Options{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
			if r.URL.Path == "/flush" {
				w.(http.Flusher).Flush()
			}
			w.Write(b)
		}),
		MaxHeaderBytes:    1 << 10,
		ReadHeaderTimeout: time.Second,
		WatchAfter:        time.Millisecond,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go s.Serve(ln)
	defer s.Close()
	f.Fuzz(func(t *testing.T, in []byte) {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		go func() {
			nc.Write(in)
			nc.(*net.TCPConn).CloseWrite()
		}()
		out, err := io.ReadAll(nc)
		if err != nil && !isReset(err) {
			t.Fatalf("the server did not end the connection: %v", err)
		}
		if len(out) > 0 && !bytes.HasPrefix(out, []byte("HTTP/1.1 ")) {
			t.Fatalf("the server wrote %q", out)
		}
	})
}
