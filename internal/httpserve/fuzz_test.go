package httpserve

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// FuzzServeConn feeds arbitrary bytes to a connection. Whatever they are,
// the connection must end once the client's side is closed, and what the
// server wrote must parse as a sequence of HTTP/1.1 responses: one per
// request the same bytes hold (read with the parser the server uses), plus
// interim 100s and at most one refusal.
func FuzzServeConn(f *testing.F) {
	for _, seed := range []string{
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
		"GET /flush HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"HEAD /flush HTTP/1.1\r\nHost: a\r\n\r\nHEAD / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
		"POST /flush HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
		"HEAD / HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	s := New(Options{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/flush" {
				w.(http.Flusher).Flush()
			}
			b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
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
		// Reset rather than linger in TIME_WAIT: a long run opens many.
		nc.(*net.TCPConn).SetLinger(0)
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
		methods := requestMethods(in)
		br := bufio.NewReader(bytes.NewReader(out))
		for i := 0; ; {
			if _, err := br.Peek(1); err == io.EOF {
				return
			}
			method := "GET"
			if i < len(methods) {
				method = methods[i]
			}
			resp, err := http.ReadResponse(br, &http.Request{Method: method})
			if err != nil {
				t.Fatalf("response %d does not parse: %v\nwritten: %q", i, err, out)
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil && !isReset(err) {
				t.Fatalf("response %d's body: %v\nwritten: %q", i, err, out)
			}
			if resp.StatusCode == http.StatusContinue {
				continue
			}
			if resp.Close {
				// Nothing may follow a response that closes the
				// connection, except, after one to a HEAD, the body of
				// a refusal (which has one whatever the method).
				if _, err := br.Peek(1); err != io.EOF && method != http.MethodHead {
					t.Fatalf("bytes after response %d, which closes the connection\nwritten: %q", i, out)
				}
				return
			}
			if i++; i > len(methods)+1 {
				t.Fatalf("%d responses to %d requests\nwritten: %q", i, len(methods), out)
			}
		}
	})
}

// requestMethods reads in as the server would and lists its requests'
// methods, up to the first that does not parse.
func requestMethods(in []byte) []string {
	br := bufio.NewReader(bytes.NewReader(in))
	var methods []string
	for {
		for {
			b, err := br.Peek(1)
			if err != nil || b[0] != '\r' && b[0] != '\n' {
				break
			}
			br.Discard(1)
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return methods
		}
		methods = append(methods, req.Method)
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return methods
		}
	}
}
