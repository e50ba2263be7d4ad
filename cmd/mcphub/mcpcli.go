package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/textdist"
	"github.com/mcphub/mcphub/registry"
)

// The tools, resources and prompts commands are MCP clients of the running
// hub (client.Conn over Streamable HTTP, as mcphub stdio reaches it): on
// /mcp, the merged view with namespaced names, on /{server}/mcp, one
// server with its own names, or on /profiles/{profile}/mcp, a profile's
// view. The connection hands back every result as the hub sent it, which
// --json prints. This file holds what the commands share: opening the
// session and turning failures into sentences.

const (
	// cliConnectTimeout bounds opening the session with the hub.
	cliConnectTimeout = 10 * time.Second
	// cliListTimeout bounds listing tools, resources or prompts.
	cliListTimeout = 30 * time.Second
	// cliStartWait is how long a command on one server's endpoint waits for
	// a server the hub is still starting; cliStartPoll is how often it asks.
	cliStartWait = 10 * time.Second
	cliStartPoll = 250 * time.Millisecond
	// tableWidth is the width the list tables fit in.
	tableWidth = 100
	// cliMessageLimit bounds one message of the hub (a JSON body or an SSE
	// event); a larger one fails its request.
	cliMessageLimit = 16 << 20
)

// cliCancelNotifyWait is how long an interrupted command waits for its
// notifications/cancelled to reach the hub, and for the session to close,
// before it exits. A variable so that a test can shorten it.
var cliCancelNotifyWait = 2 * time.Second

// hubView names an endpoint of the hub: /mcp when both are "", a server's
// own /{server}/mcp, or a profile's /profiles/{profile}/mcp.
type hubView struct {
	server, profile string
}

// path is the view's endpoint.
func (v hubView) path() string {
	switch {
	case v.server != "":
		return "/" + url.PathEscape(v.server) + "/mcp"
	case v.profile != "":
		return "/profiles/" + url.PathEscape(v.profile) + "/mcp"
	}
	return "/mcp"
}

// hubSession is one MCP session of the CLI with the running hub.
type hubSession struct {
	conn    *client.Conn
	target  hubTarget
	server  string // the server whose own endpoint this is; "" for /mcp
	profile string // the profile whose endpoint this is; "" for /mcp
	// mode is the profile's mode (registry.ModeFull or ModeSearch), and
	// profileTools how many tools it serves, as the hub said when the
	// session was opened.
	mode         string
	profileTools int
	wire         *hubWire

	mu       sync.Mutex
	inFlight json.RawMessage // the id of the request an interrupt ended, for its cancellation

	closeOnce sync.Once
	closed    chan struct{} // closed once the connection's Close returned
	abandoned atomic.Bool   // an interrupted command no longer waits for Close
}

// where names the session's view for messages: the hub, or one server.
func (s *hubSession) where() string {
	switch {
	case s.server != "":
		return fmt.Sprintf("server %s", s.server)
	case s.profile != "":
		return fmt.Sprintf("profile %s", s.profile)
	}
	return "the hub"
}

// searchMode reports whether the session is on a profile in search mode,
// whose tools/list holds the search tools instead of its catalog.
func (s *hubSession) searchMode() bool { return s.mode == registry.ModeSearch }

// startClose starts ending the session, once, and returns a channel closed
// when that is done.
func (s *hubSession) startClose() <-chan struct{} {
	s.closeOnce.Do(func() {
		s.closed = make(chan struct{})
		go func() {
			s.conn.Close()
			close(s.closed)
		}()
	})
	return s.closed
}

// Close ends the session with the hub and waits for it, unless the command
// was interrupted: then interruptedErr already gave it what time it had.
func (s *hubSession) Close() error {
	done := s.startClose()
	if !s.abandoned.Load() {
		<-done
	}
	return nil
}

// hubWire is the HTTP side of a session, which the connection's errors do
// not tell: where a redirect pointed, and the failure of a request that got
// no answer at all.
type hubWire struct {
	base http.RoundTripper

	mu       sync.Mutex
	redirect *url.URL // where the last redirect pointed
	netErr   error    // the first failure to reach the hub
}

func (w *hubWire) RoundTrip(req *http.Request) (*http.Response, error) {
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
func (w *hubWire) checkRedirect(req *http.Request, _ []*http.Request) error {
	w.mu.Lock()
	w.redirect = req.URL
	w.mu.Unlock()
	return http.ErrUseLastResponse
}

func (w *hubWire) seen() (redirect *url.URL, netErr error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.redirect, w.netErr
}

// openView opens an MCP session with the running hub, found as status
// finds it, on v's endpoint: /mcp; a server's own once the hub says it
// serves that server and has it connected; a profile's once the hub says it
// serves the profile, without a problem. h receives what the hub sends on
// its own; it may be nil.
func (a *app) openView(ctx context.Context, v hubView, h client.Handler) (*hubSession, error) {
	t, _, err := a.statusTarget()
	if err != nil {
		return nil, err
	}
	var prof *api.ProfileStatus
	switch {
	case v.server != "":
		if err := checkServer(ctx, t, v.server); err != nil {
			return nil, err
		}
	case v.profile != "":
		if prof, err = a.checkProfile(ctx, t, v.profile); err != nil {
			return nil, err
		}
	}
	path := v.path()
	base := http.DefaultTransport
	if t.tlsCert != "" {
		hc, err := t.pinnedClient()
		if err != nil {
			return nil, err
		}
		base = hc.Transport
	}
	wire := &hubWire{base: base}
	cfg := client.Config{
		Name: "hub", URL: t.url(path), Transport: client.TransportStreamableHTTP,
		HTTPClient: &http.Client{Transport: wire, CheckRedirect: wire.checkRedirect},
		ClientInfo: client.Implementation{Name: "mcphub-cli", Version: mcphubVersion()},
		// No roots, sampling or elicitation: the CLI answers none of them.
		Capabilities: json.RawMessage(`{}`),
		// A session, as the hub counts and lists them; a call the user
		// interrupts is cancelled by notifications/cancelled.
		ProtocolVersion: jsonrpc.LatestSessionVersion,
		MaxMessageBytes: cliMessageLimit,
		Logger:          slog.New(slog.DiscardHandler),
	}
	if t.token != "" {
		cfg.Headers = map[string]string{"Authorization": "Bearer " + t.token}
	}
	s := &hubSession{conn: client.New(cfg, h), target: t, server: v.server, profile: v.profile, wire: wire}
	if prof != nil {
		s.mode, s.profileTools = prof.Mode, prof.Tools
	}
	cctx, cancel := context.WithTimeout(ctx, cliConnectTimeout)
	defer cancel()
	if err := s.conn.Start(cctx); err != nil {
		s.conn.Close()
		if p := s.hubErr(err); p != nil {
			return nil, p
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("the hub at %s did not open an MCP session within %s", t.listen, cliConnectTimeout)
		}
		return nil, fmt.Errorf("open an MCP session with the hub at %s: %w", t.listen, cleanErr(err))
	}
	return s, nil
}

// checkServer makes sure the hub serves server's own endpoint with the
// server connected, and says what to do when it does not. A server the hub
// is still starting is waited for, up to cliStartWait.
func checkServer(ctx context.Context, t hubTarget, server string) error {
	deadline := time.Now().Add(cliStartWait)
	for {
		st, err := fetchStatus(ctx, t)
		if err != nil {
			return err
		}
		s := serverStatus(st, server)
		if s == nil {
			return unknownServerErr(st, server)
		}
		switch s.State {
		case api.StateConnected:
			return nil
		case api.StateDisabled:
			return fmt.Errorf("server %q is disabled; enable it with: mcphub enable %s", server, server)
		case api.StateStarting:
			wait := min(cliStartPoll, time.Until(deadline))
			if wait <= 0 {
				return fmt.Errorf("server %s is still starting after %s; see mcphub status or mcphub logs %s", server, cliStartWait, server)
			}
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			case <-timer.C:
			}
			continue
		}
		return notConnectedErr(*s)
	}
}

// checkProfile makes sure the hub serves the profile called name, and
// serves it: a profile whose table has a problem answers nothing until it
// is fixed. It returns the hub's status of the profile. A hub that lists no
// profile while the registry has this one is older than this mcphub.
func (a *app) checkProfile(ctx context.Context, t hubTarget, name string) (*api.ProfileStatus, error) {
	st, err := fetchStatus(ctx, t)
	if err != nil {
		return nil, err
	}
	p := profileStatus(st, name)
	if p == nil {
		if len(st.Profiles) == 0 {
			if reg, err := registry.LoadServing(a.configPath); err == nil && reg.Profile(name) != nil {
				return nil, olderHubErr(t, "lists no profiles")
			}
		}
		return nil, noProfileErr(name, "the hub", st.Profiles, func(p api.ProfileStatus) string { return p.Name })
	}
	if p.Problem != "" {
		return nil, fmt.Errorf("profile %s serves nothing until its table is fixed (mcphub validate shows every problem):\n%s", name, p.Problem)
	}
	return p, nil
}

// profileStatus is the entry of st for the profile called name, nil when
// it lists none (or name is "").
func profileStatus(st *api.Status, name string) *api.ProfileStatus {
	for i := range st.Profiles {
		if name != "" && st.Profiles[i].Name == name {
			return &st.Profiles[i]
		}
	}
	return nil
}

// noProfileErr says that where (the hub, a registry file) has no profile
// called name, naming the closest of its profiles, or how to add one.
// nameOf is a profile's name.
func noProfileErr[P any](name, where string, profiles []P, nameOf func(P) string) error {
	if len(profiles) == 0 {
		return fmt.Errorf("no profile %q in %s; it has none (a profile is a [profiles.NAME] table of the registry)", name, where)
	}
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = nameOf(p)
	}
	slices.Sort(names)
	msg := fmt.Sprintf("no profile %q in %s; its profiles are %s", name, where, strings.Join(names, ", "))
	if close := textdist.Suggest(name, names, 3); len(close) > 0 {
		msg += " (did you mean " + strings.Join(close, ", ") + "?)"
	}
	return errors.New(msg)
}

// olderHubErr says that the hub at t is older than this mcphub, as it
// lacks something this mcphub asks for (lacks: "lists no profiles"), and
// to restart it with this one.
func olderHubErr(t hubTarget, lacks string) error {
	return fmt.Errorf("the hub at %s %s, so it is older than this mcphub; restart it with this one (see mcphub status)", t.listen, lacks)
}

// serverStatus is the entry of st for server, nil when it lists none.
func serverStatus(st *api.Status, server string) *api.ServerStatus {
	for i := range st.Servers {
		if st.Servers[i].Name == server {
			return &st.Servers[i]
		}
	}
	return nil
}

// unknownServerErr says that the hub has no server named server, and which
// it has.
func unknownServerErr(st *api.Status, server string) error {
	var known []string
	for _, s := range st.Servers {
		if s.State != api.StateDisabled {
			known = append(known, s.Name)
		}
	}
	if len(known) == 0 {
		return fmt.Errorf("no server %q in the hub; it serves none (add one with: mcphub add NAME -- COMMAND)", server)
	}
	slices.Sort(known)
	return fmt.Errorf("no server %q in the hub; known: %s", server, strings.Join(known, ", "))
}

// notConnectedErr says that a server is not connected, why, and where to
// look.
func notConnectedErr(s api.ServerStatus) error {
	msg := fmt.Sprintf("server %s is %s", s.Name, s.State)
	if s.LastError != "" {
		msg += ": " + oneLine(s.LastError, 200)
	}
	return fmt.Errorf("%s; see mcphub status or mcphub logs %s", msg, s.Name)
}

// noteMissing says on stderr which servers the merged view lacks because
// they are not connected, so that a short list is not taken for all there
// is. kind is what they would add: "tools", "prompts", "resources". It says
// nothing when the hub's status cannot be had.
func (a *app) noteMissing(ctx context.Context, s *hubSession, kind string) {
	if s.server != "" {
		return
	}
	st, err := fetchStatus(ctx, s.target)
	if err != nil {
		return
	}
	a.noteDown(st, s.profile, kind)
}

// noteDown is noteMissing with the hub's status st, for /mcp, which has
// every server, or for profile's endpoint, which has those it selects.
func (a *app) noteDown(st *api.Status, profile, kind string) {
	var only []string
	if profile != "" {
		p := profileStatus(st, profile)
		if p == nil {
			return
		}
		only = p.Servers
	}
	var down []api.ServerStatus
	for _, srv := range st.Servers {
		if profile != "" && !slices.Contains(only, srv.Name) {
			continue
		}
		switch srv.State {
		case api.StateConnected, api.StateDisabled:
		case api.StateNeedsLogin:
			fmt.Fprintf(a.stderr, "note: server %s needs you to sign in: run mcphub login %s\n", srv.Name, srv.Name)
		default:
			down = append(down, srv)
		}
	}
	switch len(down) {
	case 0:
	case 1:
		fmt.Fprintf(a.stderr, "note: server %s is %s, so its %s are missing; see mcphub status or mcphub logs %s\n",
			down[0].Name, down[0].State, kind, down[0].Name)
	default:
		names := make([]string, len(down))
		for i, srv := range down {
			names[i] = fmt.Sprintf("%s (%s)", srv.Name, srv.State)
		}
		fmt.Fprintf(a.stderr, "note: servers %s are not connected, so their %s are missing; see mcphub status\n",
			strings.Join(names, ", "), kind)
	}
}

// fail turns an error of a request on the session into what the command
// reports: the transport's sentence when the hub could not be reached, the
// hub's reason when it refused the request, its message for a JSON-RPC
// error; never a body. what says what the request was for.
func (s *hubSession) fail(what string, err error) error {
	if p := s.hubErr(err); p != nil {
		var he *hubError
		if errors.As(p, &he) && he.status != http.StatusUnauthorized && !isRedirect(he.status) {
			return fmt.Errorf("%s: %w", what, p)
		}
		return p
	}
	return fmt.Errorf("%s: %w", what, cleanErr(err))
}

// isRedirect reports whether an HTTP status is a redirect.
func isRedirect(status int) bool { return status >= 300 && status < 400 }

// hubErr is the sentence for a failure below JSON-RPC: a hub that could not
// be reached (errNoHub), a failed connection (a TLS mismatch), a refused
// token, a redirect, or another refusal with the hub's reason. nil for any
// other error.
func (s *hubSession) hubErr(err error) error {
	t := s.target
	redirect, netErr := s.wire.seen()
	var he *client.HTTPError
	var op *net.OpError
	switch {
	case errors.As(err, new(*jsonrpc.Error)):
		return nil // the hub's answer, not a failure to reach it
	case errors.As(err, new(*client.AuthRequiredError)):
		return tokenRefused(t)
	case errors.As(err, &he) && he.Status == http.StatusUnauthorized:
		return tokenRefused(t)
	case he != nil && isRedirect(he.Status):
		msg := fmt.Sprintf("the hub at %s answered HTTP %d", t.listen, he.Status)
		if redirect != nil && redirect.Host != "" {
			msg += fmt.Sprintf(", a redirect to %s://%s", redirect.Scheme, redirect.Host)
		}
		return &hubError{status: he.Status, msg: msg + "; mcphub never redirects, so something else answers there: check [hub] listen (see mcphub status)"}
	case he != nil:
		// The connection keeps the start of the body, which holds the
		// hub's reason.
		return hubAnswerError(t, he.Status, []byte(he.Body))
	case netErr == nil:
		return nil
	case errors.As(netErr, &op) && op.Op == "dial":
		return fmt.Errorf("%w at %s (start one with: mcphub serve)", errNoHub, t.listen)
	case t.tlsCert != "":
		return fmt.Errorf("no HTTPS connection with the hub at %s: %w; [hub] tls_cert must be the certificate the running hub serves (see mcphub status)", t.listen, netErr)
	}
	return fmt.Errorf("the hub at %s did not answer: %w; see whether it still runs with: mcphub status", t.listen, netErr)
}

// cleanErr is err as a user reads it: a JSON-RPC error is its message (the
// hub's sentence), without the method and code around it.
func cleanErr(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return errors.New(we.Message)
	}
	return err
}

// rpcCode is the JSON-RPC error code of err, 0 when it carries none.
func rpcCode(err error) int {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return int(we.Code)
	}
	return 0
}

// withInterrupt is ctx cancelled by the first Ctrl-C (or SIGTERM, or SIGHUP
// on Unix: cliSignals), which then ends the request it was made for; a
// second one ends the process as usual. interrupted reports whether the
// first one came; stop releases the signals.
func withInterrupt(ctx context.Context) (_ context.Context, interrupted func() bool, stop func()) {
	if ctx == nil {
		ctx = context.Background()
	}
	ictx, cancel := context.WithCancel(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, cliSignals...)
	var got atomic.Bool
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			got.Store(true)
			signal.Stop(ch)
			cancel()
		case <-done:
		}
	}()
	stop = sync.OnceFunc(func() {
		signal.Stop(ch)
		close(done)
		cancel()
	})
	return ictx, got.Load, stop
}

// request sends method to the hub and waits for its result, as the hub
// sent it, or for ctx to end. The request itself is not bound to ctx: when
// ctx ends first (Ctrl-C), the request stays in flight, and interruptedErr
// sends its cancellation and closes the session, which ends it here.
func (s *hubSession) request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
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

// interruptedErr is the exit of a command the user interrupted: it sends
// the hub notifications/cancelled for the request in flight (so the
// upstream call is cancelled too) and closes the session, waiting at most
// cliCancelNotifyWait in all, and exits 130 as a shell does. A list the
// connection was paging through is cancelled by closing the session,
// which ends its requests on the hub. A hub that does not answer in time is
// left to time out on its own.
func (a *app) interruptedErr(s *hubSession) error {
	msg := "interrupted"
	if s != nil {
		deadline := time.Now().Add(cliCancelNotifyWait)
		s.mu.Lock()
		id := s.inFlight
		s.mu.Unlock()
		confirmed := true
		if id != nil {
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			params := fmt.Appendf(nil, `{"requestId":%s,"reason":"interrupted by the user"}`, id)
			confirmed = s.conn.Notify(ctx, "notifications/cancelled", params) == nil
			cancel()
		}
		s.abandoned.Store(true)
		timer := time.NewTimer(max(time.Until(deadline), 0))
		select {
		case <-s.startClose():
		case <-timer.C:
			if id == nil {
				confirmed = false
			}
		}
		timer.Stop()
		msg = "interrupted; the request was cancelled"
		if !confirmed {
			msg = "interrupted; the hub did not confirm the cancellation"
		}
	}
	fmt.Fprintln(a.stderr, "mcphub: "+msg)
	return exitError{code: 130, why: msg}
}

// printRaw prints a JSON value indented, byte for byte what it holds apart
// from whitespace.
func printRaw(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return fmt.Errorf("the hub's answer is not JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// decodeItems decodes raw items into T, for the text tables.
func decodeItems[T any](method string, raws []json.RawMessage) ([]T, error) {
	items := make([]T, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &items[i]); err != nil {
			return nil, fmt.Errorf("%s: the hub's item %d is malformed: %w", method, i+1, err)
		}
	}
	return items, nil
}

// ---------------------------------------------------------------------------
// Listing with every page.

// listAll is every item of a list method, as the hub sent them, across its
// pages. A hub (or server) without the feature answers "method not found":
// that is an empty list.
func (s *hubSession) listAll(ctx context.Context, method string) ([]json.RawMessage, error) {
	items, err := s.conn.ListAll(ctx, method)
	if rpcCode(err) == jsonrpc.CodeMethodNotFound {
		return nil, nil
	}
	return items, err
}

// toolEntry, promptEntry, resourceEntry and templateEntry are what the
// text tables show of an item.
type toolEntry struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

type promptEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Arguments   []*struct {
		Name     string `json:"name"`
		Required bool   `json:"required"`
	} `json:"arguments"`
}

type resourceEntry struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

type templateEntry struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// itemNames are the names of raw items (tools, prompts), "" for one
// without.
func itemNames(tools []json.RawMessage) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i], _ = jsonrpc.StringMember(t, "name")
	}
	return names
}

// ---------------------------------------------------------------------------
// The ls commands.

// listCmd completes cmd, which has its texts and Args, as a command that
// lists with run: tools, prompts and resources themselves, which take no
// argument and list the merged endpoint, and their ls [SERVER], which lists
// server's own endpoint when given one. --profile NAME lists the profile's
// endpoint instead. jsonUsage is what its --json does.
func (a *app) listCmd(cmd *cobra.Command, jsonUsage string, run func(ctx context.Context, v hubView, asJSON bool) error) *cobra.Command {
	var asJSON bool
	var profile string
	if strings.HasPrefix(cmd.Use, "ls ") {
		servers := a.completeServers(enabledServer)
		cmd.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if profile != "" {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return servers(c, args, toComplete)
		}
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		v := hubView{profile: profile}
		if len(args) == 1 {
			v.server = args[0]
		}
		if v.server != "" && v.profile != "" {
			return fmt.Errorf("give SERVER or --profile, not both: SERVER lists that server's own endpoint, --profile a profile's; usage: %s (see %s --help)", cmd.UseLine(), cmd.CommandPath())
		}
		return run(cmd.Context(), v, asJSON)
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, jsonUsage)
	cmd.Flags().StringVar(&profile, "profile", "", "list what a client of the profile's endpoint (/profiles/NAME/mcp) is given")
	cmd.RegisterFlagCompletionFunc("profile", a.completeProfileFlag)
	return cmd
}

// completeProfileFlag completes the value of a --profile flag, for shell
// completion: the registry's profiles, each described by its mode. It
// reads the registry without creating it and completes nothing, silently,
// when the registry does not load.
func (a *app) completeProfileFlag(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	reg, err := registry.LoadServing(a.configPath)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, p := range reg.Profiles {
		if strings.HasPrefix(p.Name, prefix) {
			out = append(out, cobra.CompletionWithDesc(p.Name, p.Mode+" mode"))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// listView opens a session with the hub on v's endpoint and lists kind
// ("tools") on it with fetch, within cliListTimeout. Then it notes the
// servers whose kind the view lacks and has show print the lists. Ctrl-C
// ends it as an interrupt.
func (a *app) listView(ctx context.Context, v hubView, kind string, fetch func(ctx context.Context, s *hubSession) error, show func() error) error {
	ctx, interrupted, stop := withInterrupt(ctx)
	defer stop()
	s, err := a.openView(ctx, v, nil)
	if err != nil {
		if interrupted() {
			return a.interruptedErr(nil)
		}
		return err
	}
	defer s.Close()
	lctx, cancel := context.WithTimeout(ctx, cliListTimeout)
	defer cancel()
	if err := fetch(lctx, s); err != nil {
		if interrupted() {
			return a.interruptedErr(s)
		}
		return s.fail("list the "+kind+" of "+s.where(), err)
	}
	a.noteMissing(ctx, s, kind)
	return show()
}

// lister describes one kind of item an ls command lists with listOf.
type lister[T any] struct {
	method string           // the list method: "tools/list"
	member string           // the array of its result: "tools"
	noun   string           // one item, for the count line: "tool"
	name   func(T) string   // what the table is sorted by
	header []string         // the table's header
	row    func(T) []string // one item's cells
	// note, when set, is a line that follows the count line: "" for none.
	note func(s *hubSession) string
}

// listOf is an ls command for one kind of item: the items of v's endpoint,
// as a table sorted by name with a count line, or with asJSON the array as
// the hub sent it.
func listOf[T any](ctx context.Context, a *app, v hubView, asJSON bool, l lister[T]) error {
	var raws []json.RawMessage
	var sess *hubSession
	fetch := func(ctx context.Context, s *hubSession) error {
		var err error
		sess = s
		raws, err = s.listAll(ctx, l.method)
		return err
	}
	return a.listView(ctx, v, l.member, fetch, func() error {
		if asJSON {
			return printRaw(a.stdout, jsonrpc.AppendArray(nil, raws))
		}
		items, err := decodeItems[T](l.method, raws)
		if err != nil {
			return err
		}
		slices.SortFunc(items, func(x, y T) int { return strings.Compare(l.name(x), l.name(y)) })
		if len(items) > 0 {
			rows := make([][]string, len(items))
			for i, it := range items {
				rows[i] = l.row(it)
			}
			printTable(a.stdout, l.header, rows)
		}
		fmt.Fprintln(a.stdout, howMany(len(items), l.noun))
		if l.note != nil {
			if n := l.note(sess); n != "" {
				fmt.Fprintln(a.stdout, n)
			}
		}
		return nil
	})
}

// ---------------------------------------------------------------------------
// Unknown names.

// unknownNameErr says that the view has no kind named name, how many it has
// and the command that lists them, naming the closest ones it has.
func (s *hubSession) unknownNameErr(kind, name string, names []string, lsCmd string) error {
	return fmt.Errorf("no %s %q on %s%s", kind, name, s.where(), suggestNames(kind, name, names, lsCmd, "it"))
}

// suggestNames is what follows a sentence saying that name is not a kind
// of the view: the closest names it has, and how to list them all; subject
// is how the view is referred to ("it", "the hub").
func suggestNames(kind, name string, names []string, lsCmd, subject string) string {
	if len(names) == 0 {
		return fmt.Sprintf("; %s serves no %ss (run \"mcphub status\" to see its servers)", subject, kind)
	}
	msg := ""
	if close := textdist.Suggest(name, names, 3); len(close) > 0 {
		msg = " (did you mean " + strings.Join(close, ", ") + "?)"
	}
	return fmt.Sprintf("%s; run %q to see the %s %s serves", msg, lsCmd, howMany(len(names), kind), subject)
}

// howMany is "1 tool", "2 tools".
func howMany(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// ---------------------------------------------------------------------------
// Output.

// printTable prints rows of cells, columns padded to their widest cell and
// two spaces apart, the last column cut to one line that fits tableWidth.
func printTable(w io.Writer, header []string, rows [][]string) {
	widths := make([]int, len(header)-1)
	for _, r := range append([][]string{header}, rows...) {
		for i := range widths {
			widths[i] = max(widths[i], len([]rune(r[i])))
		}
	}
	lead := 0
	for _, wd := range widths {
		lead += wd + 2
	}
	room := max(tableWidth-lead, 20)
	for _, r := range append([][]string{header}, rows...) {
		var b strings.Builder
		for i, wd := range widths {
			b.WriteString(r[i])
			b.WriteString(strings.Repeat(" ", wd-len([]rune(r[i]))+2))
		}
		b.WriteString(firstLine(r[len(r)-1], room))
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// firstLine is the first non-empty line of s, its spaces collapsed, cut to
// at most width columns (the cut ends in "…").
func firstLine(s string, width int) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.Join(strings.Fields(line), " "); line != "" {
			if len([]rune(line)) <= width {
				return line
			}
			return string([]rune(line)[:width-1]) + "…"
		}
	}
	return ""
}

// printContent prints content blocks as a user reads them: text as it is,
// each block on its own lines; images and audio as a note with their MIME
// type and size; resource links as their URI, embedded resources as their
// text (a note for a binary one).
func printContent(w io.Writer, content []mcp.Content) {
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			printText(w, c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %s]\n", mimeOr(c.MIMEType), howMany(len(c.Data), "byte"))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %s]\n", mimeOr(c.MIMEType), howMany(len(c.Data), "byte"))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link %s]\n", c.URI)
		case *mcp.EmbeddedResource:
			switch {
			case c.Resource == nil:
			case c.Resource.Blob == nil && c.Resource.Text == "":
				fmt.Fprintf(w, "[resource %s]\n", c.Resource.URI)
			default:
				printResourceContents(w, c.Resource)
			}
		default:
			fmt.Fprintln(w, "[content of a type mcphub does not show; see it with --json]")
		}
	}
}

// printResourceContents prints a resource's contents: its text as it is, a
// binary one as a note with its URI, MIME type and size.
func printResourceContents(w io.Writer, c *mcp.ResourceContents) {
	if c.Blob != nil {
		fmt.Fprintf(w, "[%s %s, %s]\n", c.URI, mimeOr(c.MIMEType), howMany(len(c.Blob), "byte"))
		return
	}
	printText(w, c.Text)
}

// printText prints text as it is, ending it with a newline when it has
// none.
func printText(w io.Writer, text string) {
	fmt.Fprint(w, text)
	if !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(w)
	}
}

func mimeOr(t string) string {
	if _, _, err := mime.ParseMediaType(t); err != nil || t == "" {
		return "of unknown type"
	}
	return t
}

// ---------------------------------------------------------------------------
// Arguments.

// keyValue is one key=value argument.
type keyValue struct {
	key, value string
}

// keyValues splits key=value arguments, the value taken as it is; a key
// given twice is refused.
func keyValues(args []string) ([]keyValue, error) {
	out := make([]keyValue, 0, len(args))
	seen := make(map[string]bool, len(args))
	for _, arg := range args {
		k, v, ok := strings.Cut(arg, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q is not key=value; pass arguments as key=value pairs, such as path=/tmp", arg)
		}
		if seen[k] {
			return nil, fmt.Errorf("argument %s is given twice; give each argument once", k)
		}
		seen[k] = true
		out = append(out, keyValue{k, v})
	}
	return out, nil
}

// jsonKind is the type of one JSON value as JSON Schema names it: "string",
// "number" (integer or not), "boolean", "object", "array" or "null".
func jsonKind(v string) string {
	switch t := strings.TrimSpace(v); t[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// isInteger reports whether a JSON number has no fractional part, as JSON
// Schema's "integer" wants (3, 3.0 and 3e2 are integers).
func isInteger(num string) bool {
	f, _, err := big.ParseFloat(strings.TrimSpace(num), 10, 256, big.ToNearestEven)
	return err == nil && f.IsInt()
}

// schemaTypes are the JSON Schema types an input schema declares for each
// property; a property declared without a type is left out. A schema that
// does not parse declares none.
func schemaTypes(schema json.RawMessage) map[string][]string {
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	out := make(map[string][]string, len(s.Properties))
	for name, p := range s.Properties {
		var one string
		var many []string
		switch {
		case json.Unmarshal(p.Type, &one) == nil && one != "":
			out[name] = []string{one}
		case json.Unmarshal(p.Type, &many) == nil && len(many) > 0:
			out[name] = many
		}
	}
	return out
}

// argumentValue is the JSON value a key=value argument sends. types are the
// types the tool's input schema declares for key (none: not declared):
//   - a string-only argument takes the value as it is;
//   - any other declared type takes it as JSON of that type, and a value
//     that is not is refused with a sentence; a JSON string literal,
//     though, sends that string, for the server to judge;
//   - a string argument that may also be another type takes the value as
//     JSON when it is one of those types, as it is otherwise;
//   - an undeclared argument takes the value as JSON when it is a JSON
//     value, as it is otherwise.
func argumentValue(key, value string, types []string) (json.RawMessage, error) {
	isJSON := strings.TrimSpace(value) != "" && json.Valid([]byte(value))
	kind := ""
	if isJSON {
		kind = jsonKind(value)
	}
	fits := func(t string) bool {
		switch {
		case t == kind:
			return true
		case t == "integer":
			return kind == "number" && isInteger(value)
		}
		return false
	}
	verbatim := func() (json.RawMessage, error) { return json.Marshal(value) }
	asSent := func() (json.RawMessage, error) { return json.RawMessage(strings.TrimSpace(value)), nil }
	others := slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "string" })
	switch {
	case len(types) == 0:
		if isJSON {
			return asSent()
		}
		return verbatim()
	case len(others) < len(types): // "string" is one of them
		if isJSON && slices.ContainsFunc(others, fits) {
			return asSent()
		}
		return verbatim()
	case kind == "string" || slices.ContainsFunc(types, fits):
		return asSent()
	}
	wants := make([]string, len(types))
	for i, t := range types {
		wants[i] = typeWording(t)
	}
	got := value
	if utf8.RuneCountInString(got) > 60 {
		got = string([]rune(got)[:59]) + "…"
	}
	if got == "" {
		got = "nothing"
	}
	return nil, fmt.Errorf("%s must be %s, got %s", key, strings.Join(wants, " or "), got)
}

// typeWording is a JSON Schema type as a sentence says what a value must be.
func typeWording(t string) string {
	switch t {
	case "number":
		return "a number"
	case "integer":
		return "an integer"
	case "boolean":
		return "true or false"
	case "object":
		return `a JSON object, such as {"a": 1}`
	case "array":
		return `a JSON array, such as ["a", "b"]`
	case "null":
		return "null"
	}
	return "of type " + t
}

// ---------------------------------------------------------------------------
// Progress.

// progressLine shows the progress notifications of one request as a single
// line on a terminal, rewritten in place; on anything else it shows nothing.
type progressLine struct {
	w     io.Writer
	on    bool
	width int // the terminal's columns

	mu    sync.Mutex
	shown bool
	done  bool
}

// show rewrites the line with p.
func (l *progressLine) show(p *mcp.ProgressNotificationParams) {
	if !l.on {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	fmt.Fprintf(l.w, "\r\x1b[K%s", cutToWidth(progressText(p), max(l.width-1, 10)))
	l.shown = true
}

// clear removes the line for good, before the result is printed.
func (l *progressLine) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.shown = false
	}
}

// progressText is one notification as the line shows it: one line, without
// a control character the server may have put in its message.
func progressText(p *mcp.ProgressNotificationParams) string {
	var b strings.Builder
	b.WriteString("progress ")
	b.WriteString(formatNumber(p.Progress))
	if p.Total > 0 {
		fmt.Fprintf(&b, "/%s (%d%%)", formatNumber(p.Total), int(100*p.Progress/p.Total))
	}
	if m := strings.Join(strings.Fields(stripControls(p.Message)), " "); m != "" {
		b.WriteString(" " + m)
	}
	return b.String()
}

func formatNumber(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprintf("%.2f", f)
}

// stripControls is s without the C0 and C1 control characters a terminal
// would act on (ESC, BEL, CSI ...); tabs and line breaks become spaces.
// Bytes that are not UTF-8 become U+FFFD.
func stripControls(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t', r == '\n', r == '\v', r == '\f', r == '\r':
			return ' '
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
			return -1
		}
		return r
	}, s)
}

// cutToWidth is s cut to at most width terminal columns, the cut ending in
// "…".
func cutToWidth(s string, width int) string {
	total := 0
	for _, r := range s {
		total += runeColumns(r)
	}
	if total <= width {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		if used+runeColumns(r) > width-1 {
			break
		}
		b.WriteRune(r)
		used += runeColumns(r)
	}
	return b.String() + "…"
}

// wideRanges are the code points terminals show two columns wide: East
// Asian wide and fullwidth characters and emoji, rounded to whole blocks
// where that errs on the wide side.
var wideRanges = [][2]rune{
	{0x1100, 0x115F},   // Hangul Jamo initials
	{0x231A, 0x231B},   // watch, hourglass
	{0x2329, 0x232A},   // angle brackets
	{0x23E9, 0x23F3},   // media symbols
	{0x25FD, 0x25FE},   // small squares
	{0x2614, 0x2615},   // umbrella, hot beverage
	{0x2648, 0x2653},   // zodiac
	{0x267F, 0x267F},   // wheelchair
	{0x2693, 0x2693},   // anchor
	{0x26A1, 0x26A1},   // high voltage
	{0x26AA, 0x26AB},   // circles
	{0x26BD, 0x26BE},   // balls
	{0x26C4, 0x26C5},   // snowman, sun
	{0x26CE, 0x26CE},   // ophiuchus
	{0x26D4, 0x26D4},   // no entry
	{0x26EA, 0x26EA},   // church
	{0x26F2, 0x26F5},   // fountain ... sailboat
	{0x26FA, 0x26FA},   // tent
	{0x26FD, 0x26FD},   // fuel pump
	{0x2705, 0x2705},   // check mark
	{0x270A, 0x270B},   // fists
	{0x2728, 0x2728},   // sparkles
	{0x274C, 0x274E},   // cross marks
	{0x2753, 0x2757},   // question and exclamation marks
	{0x2795, 0x2797},   // heavy plus, minus, division
	{0x27B0, 0x27B0},   // curly loop
	{0x27BF, 0x27BF},   // double curly loop
	{0x2B1B, 0x2B1C},   // large squares
	{0x2B50, 0x2B50},   // star
	{0x2B55, 0x2B55},   // circle
	{0x2E80, 0x303E},   // CJK radicals, Kangxi, ideographic description, CJK symbols
	{0x3041, 0x33FF},   // Hiragana, Katakana, Bopomofo, Hangul compatibility, Kanbun, CJK strokes, enclosed CJK
	{0x3400, 0x4DBF},   // CJK extension A
	{0x4E00, 0x9FFF},   // CJK unified ideographs
	{0xA000, 0xA4CF},   // Yi
	{0xA960, 0xA97F},   // Hangul Jamo extended A
	{0xAC00, 0xD7A3},   // Hangul syllables
	{0xF900, 0xFAFF},   // CJK compatibility ideographs
	{0xFE10, 0xFE19},   // vertical forms
	{0xFE30, 0xFE6F},   // CJK compatibility forms, small forms
	{0xFF00, 0xFF60},   // fullwidth forms
	{0xFFE0, 0xFFE6},   // fullwidth signs
	{0x16FE0, 0x18CFF}, // Tangut, Khitan
	{0x1AFF0, 0x1B2FF}, // Kana supplement and extensions, Nushu
	{0x1F000, 0x1F02F}, // Mahjong tiles
	{0x1F0CF, 0x1F0CF}, // joker
	{0x1F18E, 0x1F18E}, // AB button
	{0x1F191, 0x1F19A}, // squared words
	{0x1F200, 0x1F2FF}, // enclosed ideographic supplement
	{0x1F300, 0x1F64F}, // pictographs, emoticons
	{0x1F680, 0x1F6FF}, // transport and map symbols
	{0x1F7E0, 0x1F7EB}, // coloured circles and squares
	{0x1F90C, 0x1F9FF}, // supplemental symbols and pictographs
	{0x1FA70, 0x1FAFF}, // symbols and pictographs extended A
	{0x20000, 0x3FFFD}, // CJK extensions B and beyond
}

// runeColumns is how many columns a terminal gives r: 2 for the wide ones,
// 1 for every other (which errs wide for those a terminal shows in none).
func runeColumns(r rune) int {
	_, found := slices.BinarySearchFunc(wideRanges, r, func(rg [2]rune, r rune) int {
		switch {
		case rg[1] < r:
			return -1
		case rg[0] > r:
			return 1
		}
		return 0
	})
	if found {
		return 2
	}
	return 1
}
