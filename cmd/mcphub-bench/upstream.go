package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The reference upstream: the fastest honest MCP server, built on the
// official Go SDK, with an echo tool (the call-latency workload) and a tool
// that streams progress (the notification workload).

type echoIn struct {
	Text string `json:"text"`
}

type progressIn struct {
	N int `json:"n"`
}

func newReferenceServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcphub-bench-upstream", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Sends n progress notifications as fast as it can."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= in.N && tok != nil; i++ {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.N)}); err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.N)}}}, nil, nil
		})
	return s
}

// runUpstream serves the reference server over stdio, or over Streamable
// HTTP at addr.
func runUpstream(addr string) error {
	s := newReferenceServer()
	if addr == "" {
		return s.Run(context.Background(), &mcp.StdioTransport{})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	log.SetOutput(os.Stderr)
	return http.ListenAndServe(addr, h)
}

// floor serves ln by opening a connection to target for each accepted one
// and handing both to pass: a proxy in front of the upstream, measured
// beside the hub as a floor its overhead is judged against. It returns
// when ln is closed.
func floor(ln net.Listener, target string, pass func(c, u net.Conn)) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			// The proxy closes its upstream side when a client goes;
			// closing it with a reset leaves no TIME_WAIT behind, so a
			// client that opens and drops many connections (the Go SDK
			// keeps 2 idle per host) cannot run the proxy out of ports.
			u.(*net.TCPConn).SetLinger(0)
			defer u.Close()
			pass(c, u)
		}()
	}
}

// relay copies bytes both ways and nothing else: the least any proxy in
// front of the upstream can cost (one more process and one more TCP hop,
// no parsing).
func relay(c, u net.Conn) {
	// Either side ending ends both: a server keeps an idle connection
	// open, and the relay must not keep it for a client that has gone.
	done := make(chan struct{}, 2)
	go func() { io.Copy(u, c); done <- struct{}{} }()
	go func() { io.Copy(c, u); done <- struct{}{} }()
	<-done
}

// httpProxy forwards each HTTP/1.1 request to the upstream and its response
// back, parsing both with net/http and doing nothing else: no MCP, no
// sessions, no rewriting. It is the least an HTTP-aware proxy pays beyond
// the byte relay.
func httpProxy(c, u net.Conn) {
	cr, cw := bufio.NewReader(c), bufio.NewWriter(c)
	ur, uw := bufio.NewReader(u), bufio.NewWriter(u)
	for {
		req, err := http.ReadRequest(cr)
		if err != nil {
			return
		}
		if err := req.Write(uw); err != nil || uw.Flush() != nil {
			return
		}
		resp, err := http.ReadResponse(ur, req)
		if err != nil {
			return
		}
		// A stream is passed on as it comes: what was read is flushed
		// before the proxy waits for more. (The writer is wrapped so that
		// the body is copied through Write, not read into cw's buffer
		// while a flush empties it.)
		resp.Body = flushBeforeRead{resp.Body, cw, ur}
		err = resp.Write(struct{ io.Writer }{cw})
		resp.Body.Close()
		if err != nil || cw.Flush() != nil || resp.Close {
			return
		}
	}
}

// flushBeforeRead flushes w before a read of a response body that would
// wait for the upstream (src, the body's connection, has nothing buffered).
type flushBeforeRead struct {
	io.ReadCloser
	w   *bufio.Writer
	src *bufio.Reader
}

func (f flushBeforeRead) Read(p []byte) (int, error) {
	if f.src.Buffered() == 0 {
		if err := f.w.Flush(); err != nil {
			return 0, err
		}
	}
	return f.ReadCloser.Read(p)
}
