package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/termtext"
	"github.com/mcphub/mcphub/registry"
)

// The tools, resources and prompts commands are MCP clients of the running
// hub (client.Conn over Streamable HTTP, as mcphub stdio reaches it): on
// /mcp, the merged view with namespaced names, on /{server}/mcp, one
// server with its own names, or on /profiles/{profile}/mcp, a profile's
// view. The connection hands back every result as the hub sent it, which
// --json prints. This file holds what the commands share: opening the
// session (hubclient.Open, which also turns failures into sentences),
// interrupting it, and printing lists and results.

// tableWidth is the width the list tables fit in.
const tableWidth = 100

// cliCancelNotifyWait is how long an interrupted command waits for its
// notifications/cancelled to reach the hub, and for the session to close,
// before it exits. A variable so that a test can shorten it.
var cliCancelNotifyWait = 2 * time.Second

// openView opens an MCP session with the running hub, found as status
// finds it, on v's endpoint (see hubclient.Open). h receives what the hub
// sends on its own; it may be nil.
func (a *app) openView(ctx context.Context, v hubclient.View, h client.Handler) (*hubclient.Session, error) {
	t, _, err := a.statusTarget()
	if err != nil {
		return nil, err
	}
	return hubclient.Open(ctx, t, v, hubclient.Options{Handler: h, Version: mcphubVersion(), ConfigPath: a.configPath})
}

// noteMissing says on stderr which servers the merged view lacks because
// they are not connected, so that a short list is not taken for all there
// is. kind is what they would add: "tools", "prompts", "resources". It says
// nothing when the hub's status cannot be had.
func (a *app) noteMissing(ctx context.Context, s *hubclient.Session, kind string) {
	if s.View().Server != "" {
		return
	}
	st, err := s.Target().Status(ctx)
	if err != nil {
		return
	}
	a.noteDown(st, s.View().Profile, kind)
}

// noteDown is noteMissing with the hub's status st, for /mcp, which has
// every server, or for profile's endpoint, which has those it selects.
func (a *app) noteDown(st *api.Status, profile, kind string) {
	var only []string
	if profile != "" {
		p := hubclient.FindProfile(st, profile)
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

// interruptedErr is the exit of a command the user interrupted: it sends
// the hub notifications/cancelled for the request in flight (so the
// upstream call is cancelled too) and closes the session, waiting at most
// cliCancelNotifyWait in all, and exits 130 as a shell does. A list the
// connection was paging through is cancelled by closing the session,
// which ends its requests on the hub. A hub that does not answer in time is
// left to time out on its own.
func (a *app) interruptedErr(s *hubclient.Session) error {
	msg := "interrupted"
	if s != nil {
		msg = "interrupted; the request was cancelled"
		if !s.Interrupt(cliCancelNotifyWait) {
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

// ---------------------------------------------------------------------------
// Listing with every page.

// ---------------------------------------------------------------------------
// The ls commands.

// listCmd completes cmd, which has its texts and Args, as a command that
// lists with run: tools, prompts and resources themselves, which take no
// argument and list the merged endpoint, and their ls [SERVER], which lists
// server's own endpoint when given one. --profile NAME lists the profile's
// endpoint instead. jsonUsage is what its --json does.
func (a *app) listCmd(cmd *cobra.Command, jsonUsage string, run func(ctx context.Context, v hubclient.View, asJSON bool) error) *cobra.Command {
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
		v := hubclient.View{Profile: profile}
		if len(args) == 1 {
			v.Server = args[0]
		}
		if v.Server != "" && v.Profile != "" {
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
// ("tools") on it with fetch, within hubclient.ListTimeout. Then it notes the
// servers whose kind the view lacks and has show print the lists. Ctrl-C
// ends it as an interrupt.
func (a *app) listView(ctx context.Context, v hubclient.View, kind string, fetch func(ctx context.Context, s *hubclient.Session) error, show func() error) error {
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
	lctx, cancel := context.WithTimeout(ctx, hubclient.ListTimeout)
	defer cancel()
	if err := fetch(lctx, s); err != nil {
		if interrupted() {
			return a.interruptedErr(s)
		}
		return s.Fail("list the "+kind+" of "+s.Where(), err)
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
	note func(s *hubclient.Session) string
}

// listOf is an ls command for one kind of item: the items of v's endpoint,
// as a table sorted by name with a count line, or with asJSON the array as
// the hub sent it.
func listOf[T any](ctx context.Context, a *app, v hubclient.View, asJSON bool, l lister[T]) error {
	var raws []json.RawMessage
	var sess *hubclient.Session
	fetch := func(ctx context.Context, s *hubclient.Session) error {
		var err error
		sess = s
		raws, err = s.ListAll(ctx, l.method)
		return err
	}
	return a.listView(ctx, v, l.member, fetch, func() error {
		if asJSON {
			return printRaw(a.stdout, jsonrpc.AppendArray(nil, raws))
		}
		items, err := hubclient.DecodeItems[T](l.method, raws)
		if err != nil {
			return err
		}
		slices.SortFunc(items, func(x, y T) int { return strings.Compare(l.name(x), l.name(y)) })
		if len(items) > 0 {
			rows := make([][]string, len(items))
			for i, it := range items {
				rows[i] = l.row(it)
			}
			termtext.PrintTable(a.stdout, tableWidth, l.header, rows)
		}
		fmt.Fprintln(a.stdout, termtext.HowMany(len(items), l.noun))
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

// ---------------------------------------------------------------------------
// Output.

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
			fmt.Fprintf(w, "[image %s, %s]\n", mimeOr(c.MIMEType), termtext.HowMany(len(c.Data), "byte"))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %s]\n", mimeOr(c.MIMEType), termtext.HowMany(len(c.Data), "byte"))
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
		fmt.Fprintf(w, "[%s %s, %s]\n", c.URI, mimeOr(c.MIMEType), termtext.HowMany(len(c.Blob), "byte"))
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
	fmt.Fprintf(l.w, "\r\x1b[K%s", termtext.CutToWidth(termtext.Progress(p.Progress, p.Total, p.Message), max(l.width-1, 10)))
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
