package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/textdist"
)

// The tools, resources and prompts commands are MCP clients of the running
// hub (the Go SDK's client over Streamable HTTP): on /mcp, the merged view
// with namespaced names, or on /{server}/mcp, one server with its own names.
// This file holds what they share: opening the session, keeping each result
// as the hub sent it (for --json), and turning failures into sentences.

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
	// refusalBodyLimit bounds what the tap reads of a refused request's
	// body to word the refusal.
	refusalBodyLimit = 64 << 10
	// codeRejected is the SDK's own "rejected by transport" error, which
	// wraps every failure of an HTTP request and says nothing of its own.
	codeRejected = -32005
	// recordLimit bounds one message the tap keeps as the hub sent it; a
	// larger one is not kept, and the commands print the SDK's decoding of
	// it instead.
	recordLimit = 16 << 20
)

// cliCancelNotifyWait is how long an interrupted command waits for its
// notifications/cancelled to reach the hub, and for the session to close,
// before it exits. A variable so that a test can shorten it.
var cliCancelNotifyWait = 2 * time.Second

// hubSession is one MCP session of the CLI with the running hub.
type hubSession struct {
	*mcp.ClientSession
	tap    *wireTap
	target hubTarget
	server string // the server whose own endpoint this is; "" for /mcp

	closeOnce sync.Once
	closed    chan struct{} // closed once the SDK's Close returned
	abandoned atomic.Bool   // an interrupted command no longer waits for Close
}

// where names the session's view for messages: the hub, or one server.
func (s *hubSession) where() string {
	if s.server == "" {
		return "the hub"
	}
	return fmt.Sprintf("server %s", s.server)
}

// startClose starts ending the session, once, and returns a channel closed
// when that is done.
func (s *hubSession) startClose() <-chan struct{} {
	s.closeOnce.Do(func() {
		s.closed = make(chan struct{})
		go func() {
			s.ClientSession.Close()
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

// openHub opens an MCP session with the running hub, found as status finds
// it: on /mcp when server is "", else on /{server}/mcp once the hub says it
// serves that server and has it connected. opts may be nil.
func (a *app) openHub(ctx context.Context, server string, opts *mcp.ClientOptions) (*hubSession, error) {
	t, _, err := a.statusTarget()
	if err != nil {
		return nil, err
	}
	path := "/mcp"
	if server != "" {
		if err := checkServer(ctx, t, server); err != nil {
			return nil, err
		}
		path = "/" + url.PathEscape(server) + "/mcp"
	}
	var base http.RoundTripper = http.DefaultTransport
	if t.tlsCert != "" {
		hc, err := t.pinnedClient()
		if err != nil {
			return nil, err
		}
		base = hc.Transport
	}
	endpoint := t.url(path)
	tap := newWireTap(base, t, endpoint)
	var o mcp.ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.Capabilities == nil {
		// No roots, sampling or elicitation: the CLI answers none of them.
		o.Capabilities = &mcp.ClientCapabilities{}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcphub-cli", Version: mcphubVersion()}, &o)
	transport := &mcp.StreamableClientTransport{
		Endpoint: endpoint,
		HTTPClient: &http.Client{
			Transport: tap,
			// The hub never redirects: a redirect comes from something
			// else at its address, and is reported rather than followed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		DisableStandaloneSSE: true, // what the CLI waits for comes on its requests' streams
	}
	cctx, cancel := context.WithTimeout(ctx, cliConnectTimeout)
	defer cancel()
	cs, err := client.Connect(cctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: jsonrpc.LatestSessionVersion})
	if err != nil {
		if p := tap.problem(); p != nil {
			return nil, p
		}
		for _, method := range []string{"initialize", "notifications/initialized"} {
			if f := tap.failure(method); f != nil {
				return nil, f
			}
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("the hub at %s did not open an MCP session within %s", t.listen, cliConnectTimeout)
		}
		return nil, fmt.Errorf("open an MCP session with the hub at %s: %w", t.listen, cleanErr(err))
	}
	return &hubSession{ClientSession: cs, tap: tap, target: t, server: server}, nil
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
		case hub.StateConnected:
			return nil
		case hub.StateDisabled:
			return fmt.Errorf("server %q is disabled; enable it with: mcphub enable %s", server, server)
		case hub.StateStarting:
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

// serverStatus is the entry of st for server, nil when it lists none.
func serverStatus(st *hub.Status, server string) *hub.ServerStatus {
	for i := range st.Servers {
		if st.Servers[i].Name == server {
			return &st.Servers[i]
		}
	}
	return nil
}

// unknownServerErr says that the hub has no server named server, and which
// it has.
func unknownServerErr(st *hub.Status, server string) error {
	var known []string
	for _, s := range st.Servers {
		if s.State != hub.StateDisabled {
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
func notConnectedErr(s hub.ServerStatus) error {
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
	var down []hub.ServerStatus
	for _, srv := range st.Servers {
		if srv.State != hub.StateConnected && srv.State != hub.StateDisabled {
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

// fail turns an error of a request for method on the session into what the
// command reports: the transport's sentence when the hub could not be
// reached, the hub's reason when it refused the request, its message for a
// JSON-RPC error; never a body.
func (s *hubSession) fail(method, what string, err error) error {
	if p := s.tap.problem(); p != nil {
		return p
	}
	if f := s.tap.failure(method); f != nil {
		return fmt.Errorf("%s: %w", what, f)
	}
	return fmt.Errorf("%s: %w", what, cleanErr(err))
}

// cleanErr is err as a user reads it: a JSON-RPC error is its message (the
// hub's sentence), without the SDK's "calling ...: sending ..." prefixes.
func cleanErr(err error) error {
	if we := rpcError(err); we != nil {
		return we
	}
	return err
}

// rpcCode is the JSON-RPC error code of err, 0 when it carries none.
func rpcCode(err error) int64 {
	if we := rpcError(err); we != nil {
		return we.Code
	}
	return 0
}

// rpcError is the first JSON-RPC error in err's tree other than the SDK's
// "rejected by transport", which only marks a failed HTTP request; nil when
// there is none.
func rpcError(err error) *sdkjsonrpc.Error {
	if err == nil {
		return nil
	}
	if we, ok := err.(*sdkjsonrpc.Error); ok && we.Code != codeRejected {
		return we
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return rpcError(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if we := rpcError(e); we != nil {
				return we
			}
		}
	}
	return nil
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

// interruptedErr is the exit of a command the user interrupted: it waits,
// at most cliCancelNotifyWait in all, for the SDK's notifications/cancelled
// to reach the hub (so the upstream call is cancelled too) and for the
// session to close, and exits 130 as a shell does. A hub that does not
// answer in time is left to time out on its own.
func (a *app) interruptedErr(s *hubSession) error {
	msg := "interrupted"
	if s != nil {
		deadline := time.Now().Add(cliCancelNotifyWait)
		msg = "interrupted; the request was cancelled"
		if !s.tap.awaitCancelSent(deadline) {
			msg = "interrupted; the hub did not confirm the cancellation"
		}
		s.abandoned.Store(true)
		timer := time.NewTimer(max(time.Until(deadline), 0))
		select {
		case <-s.startClose():
		case <-timer.C:
		}
		timer.Stop()
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

// rawResult is the result of the session's last request of method as the
// hub sent it; nil when it was not seen (or was too large to keep).
func (s *hubSession) rawResult(method string) json.RawMessage {
	if raws := s.tap.take(method); len(raws) > 0 {
		return raws[len(raws)-1]
	}
	return nil
}

// printJSONResult prints raw, a result as the hub sent it; v, the SDK's
// decoding of it, is encoded instead only when raw is nil.
func printJSONResult(w io.Writer, raw json.RawMessage, v any) error {
	if raw != nil {
		return printRaw(w, raw)
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return printRaw(w, enc)
}

// rawMember is one member of a raw JSON object, nil when it has none.
func rawMember(raw json.RawMessage, name string) json.RawMessage {
	var obj map[string]json.RawMessage
	if raw == nil || json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	if m := obj[name]; len(m) > 0 && string(m) != "null" {
		return m
	}
	return nil
}

// rawItems gathers the member array of every page of a list method the
// session received, items as the hub sent them. ok is false when a page was
// not seen raw.
func (s *hubSession) rawItems(method, member string, pages int) (items []json.RawMessage, ok bool) {
	raws := s.tap.take(method)
	if len(raws) != pages {
		return nil, false
	}
	for _, raw := range raws {
		var page map[string]json.RawMessage
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, false
		}
		var list []json.RawMessage
		if m := page[member]; len(m) > 0 && string(m) != "null" {
			if err := json.Unmarshal(m, &list); err != nil {
				return nil, false
			}
		}
		items = append(items, list...)
	}
	return items, true
}

// rawArray is items as one JSON array.
func rawArray(items []json.RawMessage) []byte {
	out := []byte{'['}
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, ']')
}

// ---------------------------------------------------------------------------
// Listing with every page.

// listAll calls list page by page until the hub gives no next cursor, and
// returns the items and how many pages it took. A hub (or server) without
// the feature answers "method not found": that is an empty list.
func listAll[T any](ctx context.Context, list func(ctx context.Context, cursor string) ([]T, string, error)) ([]T, int, error) {
	var all []T
	cursor, pages := "", 0
	for {
		items, next, err := list(ctx, cursor)
		if err != nil {
			if rpcCode(err) == sdkjsonrpc.CodeMethodNotFound {
				return nil, 0, nil
			}
			return nil, pages, err
		}
		pages++
		all = append(all, items...)
		if next == "" || next == cursor {
			return all, pages, nil
		}
		cursor = next
	}
}

func (s *hubSession) listTools(ctx context.Context) ([]*mcp.Tool, int, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
		r, err := s.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Tools, r.NextCursor, nil
	})
}

func (s *hubSession) listPrompts(ctx context.Context) ([]*mcp.Prompt, int, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
		r, err := s.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Prompts, r.NextCursor, nil
	})
}

func (s *hubSession) listResources(ctx context.Context) ([]*mcp.Resource, int, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
		r, err := s.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Resources, r.NextCursor, nil
	})
}

func (s *hubSession) listTemplates(ctx context.Context) ([]*mcp.ResourceTemplate, int, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
		r, err := s.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.ResourceTemplates, r.NextCursor, nil
	})
}

// ---------------------------------------------------------------------------
// The ls commands.

// listCmd completes cmd, which has its texts and Args, as a command that
// lists with run: tools, prompts and resources themselves, which take no
// argument and list the merged endpoint, and their ls [SERVER], which lists
// server's own endpoint when given one. jsonUsage is what its --json does.
func (a *app) listCmd(cmd *cobra.Command, jsonUsage string, run func(ctx context.Context, server string, asJSON bool) error) *cobra.Command {
	var asJSON bool
	if strings.HasPrefix(cmd.Use, "ls ") {
		cmd.ValidArgsFunction = a.completeServers(enabledServer)
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		server := ""
		if len(args) == 1 {
			server = args[0]
		}
		return run(cmd.Context(), server, asJSON)
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, jsonUsage)
	return cmd
}

// listView opens a session with the hub on server's endpoint (the merged
// one when server is "") and lists kind ("tools") on it with fetch, within
// cliListTimeout; fetch returns the list method it called last, which an
// error is reported for. Then it notes the servers whose kind the merged
// view lacks and has show print the lists. Ctrl-C ends it as an interrupt.
func (a *app) listView(ctx context.Context, server, kind string, fetch func(ctx context.Context, s *hubSession) (method string, err error), show func(s *hubSession) error) error {
	ctx, interrupted, stop := withInterrupt(ctx)
	defer stop()
	s, err := a.openHub(ctx, server, nil)
	if err != nil {
		if interrupted() {
			return a.interruptedErr(nil)
		}
		return err
	}
	defer s.Close()
	lctx, cancel := context.WithTimeout(ctx, cliListTimeout)
	defer cancel()
	if method, err := fetch(lctx, s); err != nil {
		if interrupted() {
			return a.interruptedErr(s)
		}
		return s.fail(method, "list the "+kind+" of "+s.where(), err)
	}
	a.noteMissing(ctx, s, kind)
	return show(s)
}

// lister describes one kind of item an ls command lists with listOf.
type lister[T any] struct {
	method string                                                     // the list method: "tools/list"
	member string                                                     // the array of its result: "tools"
	noun   string                                                     // one item, for the count line: "tool"
	list   func(s *hubSession, ctx context.Context) ([]T, int, error) // the items and pages: (*hubSession).listTools
	name   func(T) string                                             // what the table is sorted by
	header []string                                                   // the table's header
	row    func(T) []string                                           // one item's cells
}

// listOf is an ls command for one kind of item: the items of server's
// endpoint (the merged one when server is ""), as a table sorted by name
// with a count line, or with asJSON the array as the hub sent it.
func listOf[T any](ctx context.Context, a *app, server string, asJSON bool, l lister[T]) error {
	var items []T
	var pages int
	fetch := func(ctx context.Context, s *hubSession) (string, error) {
		var err error
		items, pages, err = l.list(s, ctx)
		return l.method, err
	}
	return a.listView(ctx, server, l.member, fetch, func(s *hubSession) error {
		if asJSON {
			if raws, ok := s.rawItems(l.method, l.member, pages); ok {
				return printRaw(a.stdout, rawArray(raws))
			}
			raw, err := json.Marshal(append([]T{}, items...))
			if err != nil {
				return err
			}
			return printRaw(a.stdout, raw)
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
// The wire tap.

// watchedMethods are the requests whose results the commands print.
var watchedMethods = []string{"tools/list", "tools/call", "prompts/list", "prompts/get",
	"resources/list", "resources/templates/list", "resources/read"}

// wireTap is the HTTP transport of a CLI session: it sends the hub's token
// (to the hub's endpoint only), turns a hub that cannot be reached, refuses
// the token or refuses a request into the sentence the other commands give,
// and keeps the result of each watched request as the hub sent it, from the
// JSON or SSE bodies the SDK reads.
type wireTap struct {
	base     http.RoundTripper
	target   hubTarget
	endpoint *url.URL // the session's endpoint; nil when it does not parse
	limit    int      // the largest message kept: recordLimit

	mu       sync.Mutex
	pending  map[string]string            // request id → method, for watched requests in flight
	results  map[string][]json.RawMessage // method → raw results, in the order they came
	lost     bool                         // a message too large to keep went by
	firstErr error                        // why the hub could not be used at all
	failures map[string]error             // method → why the hub refused its last request

	cancelOnce sync.Once
	cancelSent chan struct{} // closed once a notifications/cancelled was delivered
}

func newWireTap(base http.RoundTripper, t hubTarget, endpoint string) *wireTap {
	w := &wireTap{base: base, target: t, limit: recordLimit, pending: map[string]string{},
		results: map[string][]json.RawMessage{}, failures: map[string]error{}, cancelSent: make(chan struct{})}
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		w.endpoint = u
	}
	return w
}

// problem is the first failure that kept the CLI from using the hub.
func (w *wireTap) problem() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstErr
}

func (w *wireTap) setProblem(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.firstErr == nil {
		w.firstErr = err
	}
	return w.firstErr
}

// failure is why the hub refused the last request for method, as a
// sentence; nil when it did not.
func (w *wireTap) failure(method string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failures[method]
}

func (w *wireTap) setFailure(method string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		delete(w.failures, method)
	} else {
		w.failures[method] = err
	}
}

// take returns and forgets the raw results of method; none once a message
// too large to keep went by, which may have been one of them.
func (w *wireTap) take(method string) []json.RawMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.results[method]
	delete(w.results, method)
	if w.lost {
		return nil
	}
	return r
}

// markLost notes that a message was too large to keep.
func (w *wireTap) markLost() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lost = true
}

// awaitCancelSent waits, until deadline at most, for a notifications/
// cancelled to reach the hub, and reports whether one did.
func (w *wireTap) awaitCancelSent(deadline time.Time) bool {
	t := time.NewTimer(max(time.Until(deadline), 0))
	defer t.Stop()
	select {
	case <-w.cancelSent:
		return true
	case <-t.C:
		select {
		case <-w.cancelSent:
			return true
		default:
			return false
		}
	}
}

// toHub reports whether u is on the session's endpoint's scheme and host,
// the only place the token may go.
func (w *wireTap) toHub(u *url.URL) bool {
	return w.endpoint != nil && u != nil && strings.EqualFold(u.Scheme, w.endpoint.Scheme) && strings.EqualFold(u.Host, w.endpoint.Host)
}

// wireMessage is the part of a JSON-RPC message the tap reads.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
}

func (w *wireTap) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if w.target.token != "" && w.toHub(req.URL) {
		req.Header.Set("Authorization", "Bearer "+w.target.token)
	}
	var sent wireMessage
	if req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
		if json.Unmarshal(body, &sent) == nil && len(sent.ID) > 0 && slices.Contains(watchedMethods, sent.Method) {
			w.mu.Lock()
			w.pending[string(bytes.TrimSpace(sent.ID))] = sent.Method
			w.mu.Unlock()
		}
	}
	resp, err := w.base.RoundTrip(req)
	if err != nil {
		return nil, w.transportErr(req, err)
	}
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		if req.Method == http.MethodPost {
			w.setFailure(sent.Method, nil)
		}
		if sent.Method == "notifications/cancelled" {
			w.cancelOnce.Do(func() { close(w.cancelSent) })
		}
		if resp.Body != nil {
			switch ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct {
			case "application/json":
				resp.Body = &jsonTee{rc: resp.Body, tap: w}
			case "text/event-stream":
				resp.Body = &sseTee{rc: resp.Body, tap: w}
			}
		}
	case code == http.StatusUnauthorized:
		w.setProblem(tokenRefused(w.target))
	case code >= 300 && code < 400:
		w.setProblem(w.redirectErr(req, resp))
	default:
		// Read the start of the body to word the refusal, and give the
		// SDK the whole body as it came.
		head, _ := io.ReadAll(io.LimitReader(resp.Body, refusalBodyLimit))
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
		if req.Method == http.MethodPost {
			w.setFailure(sent.Method, hubAnswerError(w.target, code, head))
		}
	}
	return resp, nil
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

// transportErr is the error of a request that got no answer: nothing
// listening is errNoHub; a failure to talk to what listens (a TLS mismatch,
// a connection cut) a sentence with what to check. Either keeps the CLI
// from using the hub. A request the CLI itself gave up is not the hub's
// fault, and keeps its own error.
func (w *wireTap) transportErr(req *http.Request, err error) error {
	var op *net.OpError
	switch {
	case req.Context().Err() != nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &op) && op.Op == "dial":
		return w.setProblem(fmt.Errorf("%w at %s (start one with: mcphub serve)", errNoHub, w.target.listen))
	case w.target.tlsCert != "":
		return w.setProblem(fmt.Errorf("no HTTPS connection with the hub at %s: %w; [hub] tls_cert must be the certificate the running hub serves (see mcphub status)", w.target.listen, err))
	}
	return w.setProblem(fmt.Errorf("the hub at %s did not answer: %w; see whether it still runs with: mcphub status", w.target.listen, err))
}

// redirectErr is the sentence for a redirect, which the hub never sends:
// something else answers at its address. It names where the redirect
// points by scheme and host only.
func (w *wireTap) redirectErr(req *http.Request, resp *http.Response) error {
	msg := fmt.Sprintf("the hub at %s answered HTTP %d", w.target.listen, resp.StatusCode)
	if loc, err := req.URL.Parse(resp.Header.Get("Location")); err == nil && resp.Header.Get("Location") != "" && loc.Host != "" {
		msg += fmt.Sprintf(", a redirect to %s://%s", loc.Scheme, loc.Host)
	}
	return fmt.Errorf("%s; mcphub never redirects, so something else answers there: check [hub] listen (see mcphub status)", msg)
}

// saw records a message of the hub: the result of a watched request.
func (w *wireTap) saw(data []byte) {
	var m wireMessage
	if json.Unmarshal(data, &m) != nil || m.Method != "" || len(m.ID) == 0 || len(m.Result) == 0 {
		return
	}
	id := string(bytes.TrimSpace(m.ID))
	w.mu.Lock()
	defer w.mu.Unlock()
	if method, ok := w.pending[id]; ok {
		delete(w.pending, id)
		w.results[method] = append(w.results[method], slices.Clone(m.Result))
	}
}

// jsonTee reads a JSON response body for the SDK and records its message
// once the SDK has read all of it (before the SDK can act on it); a body
// over the tap's limit is not kept.
type jsonTee struct {
	rc   io.ReadCloser
	tap  *wireTap
	buf  bytes.Buffer
	over bool
	done bool
}

func (t *jsonTee) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if !t.over {
		if t.buf.Len()+n > t.tap.limit {
			t.over, t.buf = true, bytes.Buffer{}
			t.tap.markLost()
		} else {
			t.buf.Write(p[:n])
		}
	}
	if err == io.EOF && !t.done {
		t.done = true
		if !t.over {
			t.tap.saw(t.buf.Bytes())
		}
		t.buf = bytes.Buffer{}
	}
	return n, err
}

func (t *jsonTee) Close() error { return t.rc.Close() }

// sseTee reads an SSE response body for the SDK and records each event's
// message as soon as the bytes that end it have been read, so before the
// SDK, which needs those bytes too, can act on it. An event whose lines
// pass the tap's limit is not kept: the tee only follows where it ends.
type sseTee struct {
	rc      io.ReadCloser
	tap     *wireTap
	line    []byte // the unfinished line, as far as it is kept
	lineLen int    // the unfinished line's length
	data    []byte // the event's data lines so far
	has     bool   // the event has a data line
	skip    bool   // the event is too large to keep
}

func (t *sseTee) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	t.feed(p[:n])
	if err == io.EOF {
		if t.lineLen > 0 {
			t.endLine()
		}
		t.endEvent()
	}
	return n, err
}

func (t *sseTee) Close() error { return t.rc.Close() }

func (t *sseTee) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		switch {
		case !t.skip && len(t.data)+len(t.line)+len(part) > t.tap.limit:
			t.skip, t.data, t.line = true, nil, nil
			t.tap.markLost()
		case !t.skip:
			t.line = append(t.line, part...)
		}
		if t.skip && t.lineLen+len(part) <= 1 {
			// Enough of a skipped event's line to tell a blank one ("" or
			// "\r"), which ends the event.
			t.line = append(t.line, part...)
		}
		t.lineLen += len(part)
		if i < 0 {
			return
		}
		t.endLine()
		b = b[i+1:]
	}
}

// endLine handles the line read so far, which a newline (or the body's end)
// ended.
func (t *sseTee) endLine() {
	line := bytes.TrimSuffix(t.line, []byte("\r"))
	blank := t.lineLen == 0 || t.lineLen == 1 && len(line) == 0
	t.line, t.lineLen = t.line[:0], 0
	if blank {
		t.endEvent()
		return
	}
	if t.skip {
		return
	}
	field, value, _ := bytes.Cut(line, []byte(":"))
	if string(field) != "data" {
		return
	}
	value = bytes.TrimPrefix(value, []byte(" "))
	if t.has {
		t.data = append(t.data, '\n')
	}
	t.data = append(t.data, value...)
	t.has = true
}

func (t *sseTee) endEvent() {
	if t.has && !t.skip {
		t.tap.saw(t.data)
	}
	t.data, t.has, t.skip = t.data[:0], false, false
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
