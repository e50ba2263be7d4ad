// Command dualera serves a dual-era MCP server for the conformance scripts:
// it starts the Go SDK's everything-server twice, in its session and its
// stateless HTTP modes, on free loopback ports, and serves both behind
// dualera.Handler at -http, until SIGINT or SIGTERM (or a child's exit)
// stops it and its children.
//
//	dualera -http 127.0.0.1:8080 -everything .cache/bin/everything-server
//
// The children stay in this program's process group, so a script that
// stops the group (as scripts/conformance does) stops them too, even if
// this program is killed outright.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcphub/mcphub/internal/testkit/dualera"
)

func main() {
	addr := flag.String("http", "127.0.0.1:0", "address to serve the dual-era endpoint at")
	everything := flag.String("everything", "everything-server", "the Go SDK everything-server binary")
	flag.Parse()
	if err := run(*addr, *everything); err != nil {
		slog.Error("dualera", "err", err)
		os.Exit(1)
	}
}

// run serves until a signal or a child's exit, and stops the children
// before it returns.
func run(addr, everything string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	exited := make(chan error, 2)
	var backends [2]*url.URL
	for i, stateless := range []bool{false, true} {
		c, err := startEverything(everything, stateless, exited)
		if err != nil {
			return err
		}
		defer c.stop()
		backends[i] = c.url
	}
	for _, u := range backends {
		if err := waitListening(ctx, u.Host, exited); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: dualera.Handler(backends[0], backends[1])}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	slog.Info("dualera: serving", "addr", ln.Addr().String(), "session", backends[0].String(), "stateless", backends[1].String())
	defer srv.Close()
	select {
	case <-ctx.Done():
		return nil
	case err := <-exited:
		return err
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	}
}

// child is one everything-server this program started.
type child struct {
	cmd  *exec.Cmd
	url  *url.URL
	done chan struct{} // closed once cmd.Wait returned
}

// startEverything starts the everything-server in one HTTP mode on a free
// loopback port, its output on this program's stderr; exited receives an
// error when it exits before being stopped.
func startEverything(bin string, stateless bool, exited chan<- error) (*child, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pick a port: %w", err)
	}
	hostPort := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "-http="+hostPort, fmt.Sprintf("-stateless=%t", stateless))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	c := &child{cmd: cmd, url: &url.URL{Scheme: "http", Host: hostPort}, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		close(c.done)
		exited <- fmt.Errorf("everything-server -stateless=%t exited: %v", stateless, err)
	}()
	return c, nil
}

// stop kills the child by its own PID and waits for it.
func (c *child) stop() {
	c.cmd.Process.Kill()
	<-c.done
}

// waitListening waits until hostPort accepts a connection, a child exits,
// or ctx ends.
func waitListening(ctx context.Context, hostPort string, exited <-chan error) error {
	for {
		conn, err := net.DialTimeout("tcp", hostPort, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case err := <-exited:
			return err
		case <-ctx.Done():
			return errors.New("stopped before the everything-servers listened")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
