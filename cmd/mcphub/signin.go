package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcphub/mcphub/internal/termtext"
)

// signIn is the browser side of an OAuth sign-in: a one-shot HTTP listener
// on a loopback port that the authorization server redirects back to
// (RFC 8252 §7.3), and the browser opened on the authorization URL. One
// signIn serves every authorization a sign-in needs (a step-up asks for a
// second one).
type signIn struct {
	server   string // the registry name, for the messages
	out      io.Writer
	ln       net.Listener
	srv      *http.Server
	redirect string
	got      chan signInReply
	done     chan struct{}

	mu      sync.Mutex
	want    string // the state of the authorization waited for; "" when none is
	fetched int    // authorizations asked for
}

// signInReply is what the authorization server sent back to the redirect.
type signInReply struct {
	code, state, iss, err, desc string
}

// startSignIn listens on 127.0.0.1, on port when it is free (0: any),
// else on a port the kernel picks.
func startSignIn(server string, out io.Writer, port int) (*signIn, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil && port != 0 {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			fmt.Fprintf(out, "note: port %d is in use (another sign-in?); the browser comes back to port %d instead, and a client registered for %d cannot be reused\n",
				port, ln.Addr().(*net.TCPAddr).Port, port)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sign-in: listening for the browser's redirect on 127.0.0.1: %w", err)
	}
	s := &signIn{server: server, out: out, ln: ln, got: make(chan signInReply, 1), done: make(chan struct{}),
		redirect: fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)}
	mux := http.NewServeMux()
	mux.HandleFunc("/callback", s.callback)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln)
	}()
	return s, nil
}

// RedirectURL is the URL the authorization server sends the browser back to.
func (s *signIn) RedirectURL() string { return s.redirect }

// Close stops the listener and waits for it.
func (s *signIn) Close() {
	s.srv.Close()
	<-s.done
}

// callback takes the authorization response of the authorization waited
// for: only one that carries its state, once. Anything else (a reload of
// the page, a request another program or a web page makes to this port)
// is refused and leaves the sign-in waiting.
func (s *signIn) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	reply := signInReply{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss"), err: q.Get("error"), desc: q.Get("error_description")}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	s.mu.Lock()
	ours := s.want != "" && reply.state == s.want
	if ours {
		s.want = ""
	}
	s.mu.Unlock()
	if !ours {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, page("Not the sign-in mcphub waits for", "This answer was already taken, or belongs to another sign-in. Return to the terminal."))
		return
	}
	s.got <- reply
	if reply.err != "" {
		fmt.Fprint(w, page("Sign-in failed", "The authorization server said: "+reply.err+". Return to the terminal."))
		return
	}
	fmt.Fprint(w, page("Signed in to "+s.server, "mcphub has what it needs. You can close this tab and return to the terminal."))
}

func page(title, text string) string {
	return "<!doctype html><meta charset=utf-8><title>mcphub: " + html.EscapeString(title) + "</title>" +
		"<body style=\"font-family:system-ui,sans-serif;margin:4em auto;max-width:36em\"><h1>" +
		html.EscapeString(title) + "</h1><p>" + html.EscapeString(text) + "</p></body>"
}

// Fetch is the AuthorizationCodeFetcher of the OAuth client: it opens the
// browser on the authorization URL (and prints it, for a browser on
// another machine or one that did not open), then waits for the redirect.
func (s *signIn) Fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(args.URL)
	if err != nil || u.Query().Get("state") == "" {
		return nil, errors.New("sign-in: the authorization URL carries no state")
	}
	select {
	case <-s.got: // an answer that came as an earlier authorization gave up
	default:
	}
	s.mu.Lock()
	s.want = u.Query().Get("state")
	s.fetched++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.want = ""
		s.mu.Unlock()
	}()
	fmt.Fprintf(s.out, "Sign in to %s in your browser. If it does not open, visit:\n  %s\n", s.server, args.URL)
	if err := openBrowser(args.URL); err != nil {
		fmt.Fprintf(s.out, "(could not open a browser: %v)\n", err)
	}
	select {
	case r := <-s.got:
		if r.err != "" && r.code == "" {
			msg := "sign-in refused by the authorization server: " + termtext.OneLine(termtext.StripControls(r.err), 100)
			if r.desc != "" {
				msg += " (" + termtext.OneLine(termtext.StripControls(r.desc), 200) + ")"
			}
			return nil, errors.New(msg)
		}
		return &auth.AuthorizationResult{Code: r.code, State: r.state, Iss: r.iss}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("sign-in: no answer from the browser: %w", context.Cause(ctx))
	}
}

// Fetched reports how many authorizations the sign-in asked the browser
// for.
func (s *signIn) Fetched() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetched
}

// openBrowser opens url in the user's browser: the programs $BROWSER names
// (a list separated by the OS's path list separator, as xdg-utils reads
// it; "%s" in one stands for the URL) are tried first, then the OS's own
// opener. It does not wait for the browser.
func openBrowser(url string) error {
	if b := os.Getenv("BROWSER"); b != "" {
		var errs []error
		for _, cmdline := range strings.Split(b, string(os.PathListSeparator)) {
			fields := strings.Fields(cmdline)
			if len(fields) == 0 {
				continue
			}
			args, replaced := fields[1:], false
			for i, a := range args {
				if strings.Contains(a, "%s") {
					args[i], replaced = strings.ReplaceAll(a, "%s", url), true
				}
			}
			if !replaced {
				args = append(args, url)
			}
			if err := startDetached(exec.Command(fields[0], args...)); err != nil {
				errs = append(errs, err)
				continue
			}
			return nil
		}
		return fmt.Errorf("$BROWSER: %w", errors.Join(errs...))
	}
	return startDetached(osOpener(url))
}

// startDetached starts a program and reaps it when it exits, without
// waiting for it; its output is discarded.
func startDetached(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
