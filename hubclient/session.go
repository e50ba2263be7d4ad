package hubclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/registry"
)

const (
	// ConnectTimeout bounds opening a session with the hub.
	ConnectTimeout = 10 * time.Second
	// ListTimeout bounds listing tools, resources or prompts, every page
	// of them, or asking for a catalog.
	ListTimeout = 30 * time.Second
	// startWait is how long a session on one server's endpoint waits for
	// a server the hub is still starting; startPoll is how often it asks.
	startWait = 10 * time.Second
	startPoll = 250 * time.Millisecond
	// MessageLimit bounds one message of the hub (a JSON body or an SSE
	// event) on a session; a larger one fails its request.
	MessageLimit = 16 << 20
)

// View names an endpoint of the hub: /mcp when both are "", a server's own
// /{server}/mcp, or a profile's /profiles/{profile}/mcp.
type View struct {
	Server, Profile string
}

// Path is the view's endpoint.
func (v View) Path() string {
	switch {
	case v.Server != "":
		return "/" + url.PathEscape(v.Server) + "/mcp"
	case v.Profile != "":
		return "/profiles/" + url.PathEscape(v.Profile) + "/mcp"
	}
	return "/mcp"
}

// Options are what Open needs beyond the hub and the view.
type Options struct {
	// Handler receives what the hub sends on its own (progress, say); nil
	// for none.
	Handler client.Handler
	// Name and Version are the client's, as the hub lists its sessions
	// ("mcphub-cli" when Name is "").
	Name, Version string
	// ConfigPath is the caller's registry: a hub that lists no profiles
	// while this registry has the one asked for is older than the caller.
	ConfigPath string
}

// Session is one MCP session with the running hub, on one view, as a
// terminal client holds it: every result is handed back as the hub sent
// it, and every failure becomes a sentence (Fail).
type Session struct {
	conn   *client.Conn
	target Target
	view   View
	// mode is the profile's mode (registry.ModeFull or ModeSearch), and
	// profileTools how many tools it serves, as the hub said when the
	// session was opened.
	mode         string
	profileTools int
	wire         *wire

	mu       sync.Mutex
	inFlight json.RawMessage // the id of the request an interrupt ended, for its cancellation

	closeOnce sync.Once
	closed    chan struct{} // closed once the connection's Close returned
	abandoned atomic.Bool   // an interrupted caller no longer waits for Close
}

// Open opens an MCP session with the hub at t on v's endpoint: /mcp; a
// server's own once the hub says it serves that server and has it
// connected (waiting a moment for one still starting); a profile's once
// the hub says it serves the profile, without a problem.
func Open(ctx context.Context, t Target, v View, o Options) (*Session, error) {
	var prof *api.ProfileStatus
	switch {
	case v.Server != "":
		if err := checkServer(ctx, t, v.Server); err != nil {
			return nil, err
		}
	case v.Profile != "":
		var err error
		if prof, err = checkProfile(ctx, t, v.Profile, o.ConfigPath); err != nil {
			return nil, err
		}
	}
	base := http.DefaultTransport
	if t.TLSCert != "" {
		hc, err := t.PinnedClient()
		if err != nil {
			return nil, err
		}
		base = hc.Transport
	}
	w := &wire{base: base}
	name := o.Name
	if name == "" {
		name = "mcphub-cli"
	}
	cfg := client.Config{
		Name: "hub", URL: t.URL(v.Path()), Transport: client.TransportStreamableHTTP,
		HTTPClient: &http.Client{Transport: w, CheckRedirect: w.checkRedirect},
		ClientInfo: client.Implementation{Name: name, Version: o.Version},
		// No roots, sampling or elicitation: the CLI answers none of them.
		Capabilities: json.RawMessage(`{}`),
		// A session, as the hub counts and lists them; a call the user
		// interrupts is cancelled by notifications/cancelled.
		ProtocolVersion: jsonrpc.LatestSessionVersion,
		MaxMessageBytes: MessageLimit,
		Logger:          slog.New(slog.DiscardHandler),
	}
	if t.Token != "" {
		cfg.Headers = map[string]string{"Authorization": "Bearer " + t.Token}
	}
	s := &Session{conn: client.New(cfg, o.Handler), target: t, view: v, wire: w}
	if prof != nil {
		s.mode, s.profileTools = prof.Mode, prof.Tools
	}
	cctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := s.conn.Start(cctx); err != nil {
		s.conn.Close()
		if p := s.hubErr(err); p != nil {
			return nil, p
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("the hub at %s did not open an MCP session within %s", t.Listen, ConnectTimeout)
		}
		return nil, fmt.Errorf("open an MCP session with the hub at %s: %w", t.Listen, CleanErr(err))
	}
	return s, nil
}

// View is the endpoint the session is on.
func (s *Session) View() View { return s.view }

// Target is the hub the session is with.
func (s *Session) Target() Target { return s.target }

// SearchMode reports whether the session is on a profile in search mode,
// whose tools/list holds the search tools instead of its catalog.
func (s *Session) SearchMode() bool { return s.mode == registry.ModeSearch }

// ProfileTools is how many tools the session's profile serves, as the hub
// said when the session was opened; 0 off a profile.
func (s *Session) ProfileTools() int { return s.profileTools }

// Where names the session's view for messages: the hub, one server or one
// profile.
func (s *Session) Where() string {
	switch {
	case s.view.Server != "":
		return fmt.Sprintf("server %s", s.view.Server)
	case s.view.Profile != "":
		return fmt.Sprintf("profile %s", s.view.Profile)
	}
	return "the hub"
}

// startClose starts ending the session, once, and returns a channel closed
// when that is done.
func (s *Session) startClose() <-chan struct{} {
	s.closeOnce.Do(func() {
		s.closed = make(chan struct{})
		go func() {
			s.conn.Close()
			close(s.closed)
		}()
	})
	return s.closed
}

// Close ends the session with the hub and waits for it, unless the caller
// was interrupted: then Interrupt already gave it what time it had.
func (s *Session) Close() error {
	done := s.startClose()
	if !s.abandoned.Load() {
		<-done
	}
	return nil
}

// Request sends method to the hub and waits for its result, as the hub
// sent it, or for ctx to end. The request itself is not bound to ctx: when
// ctx ends first (Ctrl-C), the request stays in flight, and Interrupt
// sends its cancellation and closes the session, which ends it here.
func (s *Session) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id := s.conn.NextID()
	type answer struct {
		raw json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	go func() {
		raw, err := s.conn.CallWithID(context.WithoutCancel(ctx), id, method, params)
		done <- answer{raw, err}
	}()
	select {
	case a := <-done:
		return a.raw, a.err
	case <-ctx.Done():
		s.mu.Lock()
		s.inFlight = id
		s.mu.Unlock()
		return nil, ctx.Err()
	}
}

// Interrupt ends a session whose caller was interrupted: it sends the hub
// notifications/cancelled for the request a Request left in flight (so
// the upstream call is cancelled too) and closes the session, waiting at
// most wait in all. A list the connection was paging through is cancelled
// by closing the session, which ends its requests on the hub. A hub that
// does not answer in time is left to time out on its own. confirmed
// reports whether the cancellation (or, with no request in flight, the
// close) went through in time.
func (s *Session) Interrupt(wait time.Duration) (confirmed bool) {
	deadline := time.Now().Add(wait)
	s.mu.Lock()
	id := s.inFlight
	s.mu.Unlock()
	confirmed = true
	if id != nil {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		params := fmt.Appendf(nil, `{"requestId":%s,"reason":"interrupted by the user"}`, id)
		confirmed = s.conn.Notify(ctx, "notifications/cancelled", params) == nil
		cancel()
	}
	s.abandoned.Store(true)
	timer := time.NewTimer(max(time.Until(deadline), 0))
	defer timer.Stop()
	select {
	case <-s.startClose():
	case <-timer.C:
		if id == nil {
			confirmed = false
		}
	}
	return confirmed
}

// ListAll is every item of a list method ("tools/list"), as the hub sent
// them, across its pages. A hub (or server) without the feature answers
// "method not found": that is an empty list.
func (s *Session) ListAll(ctx context.Context, method string) ([]json.RawMessage, error) {
	items, err := s.conn.ListAll(ctx, method)
	if RPCCode(err) == jsonrpc.CodeMethodNotFound {
		return nil, nil
	}
	return items, err
}

// wire is the HTTP side of a session, which the connection's errors do not
// tell: where a redirect pointed, and the failure of a request that got no
// answer at all.
type wire struct {
	base http.RoundTripper

	mu       sync.Mutex
	redirect *url.URL // where the last redirect pointed
	netErr   error    // the first failure to reach the hub
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err != nil && req.Context().Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		w.mu.Lock()
		if w.netErr == nil {
			w.netErr = err
		}
		w.mu.Unlock()
	}
	return resp, err
}

// checkRedirect refuses every redirect, noting where it pointed: the hub
// never redirects, so one comes from something else at its address, and is
// reported rather than followed (the token never goes there).
func (w *wire) checkRedirect(req *http.Request, _ []*http.Request) error {
	w.mu.Lock()
	w.redirect = req.URL
	w.mu.Unlock()
	return http.ErrUseLastResponse
}

func (w *wire) seen() (redirect *url.URL, netErr error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.redirect, w.netErr
}
