package httpserve

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
)

// BenchmarkRoundTrip compares one keep-alive request and response through
// httpserve and through net/http's server, with the same handler, side by
// side in one run.
func BenchmarkRoundTrip(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	servers := []struct {
		name  string
		serve func(net.Listener) (stop func())
	}{
		{"httpserve", func(ln net.Listener) func() {
			s := New(Options{Handler: h})
			go s.Serve(ln)
			return func() { s.Close() }
		}},
		{"net-http", func(ln net.Listener) func() {
			s := &http.Server{Handler: h}
			go s.Serve(ln)
			return func() { s.Close() }
		}},
	}
	req := []byte(post("/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`))
	for _, sv := range servers {
		b.Run(sv.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer sv.serve(ln)()
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			br := bufio.NewReader(nc)
			for b.Loop() {
				if _, err := nc.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
