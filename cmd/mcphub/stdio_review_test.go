package main

// The stdio face at its edges against an in-process hub: a notification
// cut off by a reset, and stdin's end while the hub is away. (The edges
// that reach into the face, such as a late state snapshot or a
// cancellation overtaking its request, are stdioface's own tests.)

import (
	"bytes"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/stdioface"
)

// tcpProxy passes TCP connections on to a hub. It can go down (the port
// refuses connections) and come back on the same address, and it can cut
// the first connection whose bytes to the hub hold cut, before they reach
// it.
type tcpProxy struct {
	target, addr string
	cut          []byte

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
	didCut bool
	sent   []*bytes.Buffer // per connection, what reached the hub
}

func startTCPProxy(t *testing.T, target, cut string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	if cut != "" {
		p.cut = []byte(cut)
	}
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pass(c)
		}
	}()
}

// track notes c, or closes it and reports false when the proxy is down.
func (p *tcpProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *tcpProxy) pass(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, up) {
		return
	}
	sent := &bytes.Buffer{}
	p.mu.Lock()
	p.sent = append(p.sent, sent)
	p.mu.Unlock()
	go func() {
		io.Copy(c, up)
		c.Close()
		up.Close()
	}()
	defer up.Close()
	defer c.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			sent.Write(buf[:n])
			if p.cut != nil && !p.didCut && bytes.Contains(sent.Bytes(), p.cut) {
				p.didCut = true
				sent.Truncate(sent.Len() - n) // never reached the hub
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			if _, err := up.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// down closes the port and every connection through it.
func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// up opens the port again.
func (p *tcpProxy) up(t *testing.T) {
	t.Helper()
	var ln net.Listener
	eventually(t, 5*time.Second, "the proxy's port opens again", func() (err error) {
		ln, err = net.Listen("tcp", p.addr)
		return err
	})
	p.serve(ln)
}

// forwarded reports whether some connection passed s to the hub, and
// whether a connection was cut.
func (p *tcpProxy) forwarded(s string) (passed, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.sent {
		if bytes.Contains(b.Bytes(), []byte(s)) {
			passed = true
		}
	}
	return passed, p.didCut
}

// TestStdioFaceNotificationAfterReset: a notification of the client's whose
// connection is reset on the way (as when the hub restarts) is sent again
// on the next connection, which resumes the same hub session.
func TestStdioFaceNotificationAfterReset(t *testing.T) {
	f := startInproc(t, childServer(t, "a", childOpts{}), hubConfig{store: fullStore})
	u, err := url.Parse(f.url)
	if err != nil {
		t.Fatal(err)
	}
	const marker = `"reason":"stop-4242"`
	px := startTCPProxy(t, u.Host, marker)
	face := startInprocFace(t, "http://"+px.addr, "/mcp", nil)
	face.initialize()
	before := f.h.Sessions()
	face.notify("notifications/cancelled", map[string]any{"requestId": 4242, "reason": "stop-4242"})
	if !poll(20*time.Second, func() bool { passed, _ := px.forwarded(marker); return passed }) {
		_, cut := px.forwarded(marker)
		t.Fatalf("the notification never reached the hub (its first connection cut: %v)", cut)
	}
	if _, cut := px.forwarded(marker); !cut {
		t.Fatal("the proxy never cut the notification's connection")
	}
	if got := face.tool("a__echo", map[string]any{"text": "after"}); got != "a:after" {
		t.Errorf("a__echo after the reset = %q, want a:after", got)
	}
	if after := f.h.Sessions(); sessionIDs(after) != sessionIDs(before) {
		t.Errorf("sessions after the reset: %s, want the same one: %s", sessionIDs(after), sessionIDs(before))
	}
}

// TestStdioFaceEndsSessionAfterOutage: stdin ends while the hub cannot be
// reached and the face waits to reconnect; when the hub answers again
// within the drain time, the face ends the session it had before exiting.
func TestStdioFaceEndsSessionAfterOutage(t *testing.T) {
	f := startInproc(t, childServer(t, "a", childOpts{}), hubConfig{store: fullStore})
	u, err := url.Parse(f.url)
	if err != nil {
		t.Fatal(err)
	}
	px := startTCPProxy(t, u.Host, "")
	face := startInprocFace(t, "http://"+px.addr, "/mcp", nil, func(c *stdioface.Options) { c.Drain = 20 * time.Second })
	face.initialize()
	if got := face.tool("a__echo", map[string]any{"text": "one"}); got != "a:one" {
		t.Fatalf("a__echo = %q, want a:one", got)
	}
	if n := len(f.h.Sessions()); n != 1 {
		t.Fatalf("the hub has %d sessions, want the face's one", n)
	}

	px.down()
	if !poll(15*time.Second, func() bool { return strings.Contains(face.logs.String(), "the hub cannot be reached") }) {
		t.Fatal("the face did not notice that the hub is gone")
	}
	face.in.Close()
	if !poll(5*time.Second, func() bool { return strings.Contains(face.logs.String(), "stdin ended") }) {
		t.Fatal("the face did not see stdin's end")
	}
	px.up(t)
	select {
	case err := <-face.done:
		face.done <- err // for cleanup
		if err != nil {
			t.Errorf("the face ended with %v, want nil at stdin's end", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the face did not stop within 30 s of stdin's end")
	}
	if !poll(5*time.Second, func() bool { return len(f.h.Sessions()) == 0 }) {
		t.Errorf("the hub session outlived the face: %+v", f.h.Sessions())
	}
}
