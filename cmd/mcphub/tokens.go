package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/mcphub/mcphub/hub"
	"github.com/mcphub/mcphub/registry"
)

func init() { commands = append(commands, newTokensCmd) }

const tokensLong = `Count the tokens the running hub's tools cost in a model's context: every
tool a client is given comes with its entry of tools/list (name,
description, input schema ...), which the client puts in the model's context
on every request. tokens lists the merged endpoint's tools (/mcp) as the hub
sends them, counts the tokens of each entry's JSON (compacted, so that
indentation does not count), and adds them up per server.

The counts come from a real tokenizer, o200k_base (GPT-4o and later) by
default, or cl100k_base (GPT-4). Claude and other models use their own
tokenizers, so the counts are estimates of theirs: use them to compare
servers and tools, and to see what a change of the registry saves.

Some clients cap the tools they take: Cursor uses about the first 40,
Windsurf at most 100, and VS Code Copilot refuses a request with more than
128. tokens says which of these caps the hub's tool count exceeds.

--json prints one object: encoding, total (tools, tokens), servers and tools
(each with its tokens, sorted by tokens) and exceeds (the caps exceeded).`

const tokensExample = `  mcphub tokens                  # tokens per server, the total and the client caps
  mcphub tokens -v               # and every tool's tokens
  mcphub tokens --encoding cl100k_base --json`

// tokenEncoding is an encoding --encoding takes, and its codec's maker,
// which decodes the encoding's vocabulary when first called.
type tokenEncoding struct {
	name  string
	codec func() *codec.Codec
}

// tokenEncodings are the encodings --encoding takes, the default first.
var tokenEncodings = []tokenEncoding{
	{name: "o200k_base", codec: codec.NewO200kBase},
	{name: "cl100k_base", codec: codec.NewCl100kBase},
}

// unknownServer is the server a tool is counted under when none of the
// registry's servers exposes a tool of that name.
const unknownServer = "?"

// toolCap is a client's limit on the number of tools it takes.
type toolCap struct {
	client     string
	cap        int
	about      bool // the cap is approximate
	perRequest bool // the cap applies to each request
}

// toolCaps are the known clients' tool caps.
var toolCaps = []toolCap{
	{client: "Cursor", cap: 40, about: true},
	{client: "Windsurf", cap: 100},
	{client: "VS Code Copilot", cap: 128, perRequest: true},
}

// wording is the cap as a sentence names it: "about 40 tools", or
// without tools "about 40".
func (c toolCap) wording(tools bool) string {
	s := fmt.Sprint(c.cap)
	if c.about {
		s = "about " + s
	}
	if tools {
		s += " tools"
	}
	if c.perRequest {
		s += " per request"
	}
	return s
}

// tokensOptions are the flags of tokens.
type tokensOptions struct {
	asJSON   bool
	tools    bool
	encoding string
}

func newTokensCmd(a *app) *cobra.Command {
	o := tokensOptions{encoding: tokenEncodings[0].name}
	cmd := &cobra.Command{
		Use:     "tokens",
		Short:   "Count the tokens the running hub's tools cost in a model's context",
		Long:    tokensLong,
		Example: tokensExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.tokens(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.asJSON, "json", false, "print the counts as one JSON object")
	fl.BoolVarP(&o.tools, "tools", "v", false, "list every tool's tokens too")
	fl.StringVar(&o.encoding, "encoding", o.encoding, "the tokenizer's encoding: o200k_base or cl100k_base")
	cmd.RegisterFlagCompletionFunc("encoding", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		names := make([]string, len(tokenEncodings))
		for i, e := range tokenEncodings {
			names[i] = e.name
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// tokens is the tokens command.
func (a *app) tokens(ctx context.Context, o tokensOptions) error {
	enc, err := findTokenEncoding(o.encoding)
	if err != nil {
		return err
	}
	var (
		items     []json.RawMessage
		owners    *toolOwners
		ownersErr error // why the tools cannot be told apart by server, a sentence of its own
	)
	fetch := func(ctx context.Context, s *hubSession) error {
		var err error
		if items, err = s.listAll(ctx, "tools/list"); err != nil {
			return err
		}
		if owners, ownersErr = a.toolOwners(ctx, s); ownersErr != nil && ctx.Err() != nil {
			return ownersErr // interrupted, or out of time
		}
		return nil
	}
	return a.listView(ctx, "", "tools", fetch, func() error {
		if ownersErr != nil {
			return ownersErr
		}
		// The vocabulary is decoded only now that the hub has answered.
		rep, err := tokenReport(&tokenCounter{codec: enc.codec()}, owners, items)
		if err != nil {
			return err
		}
		if n := rep.unknownTools(); n > 0 {
			a.noteUnknownTools(owners, n)
		}
		if o.asJSON {
			return a.printJSON(rep)
		}
		rep.print(a.stdout, o.tools)
		return nil
	})
}

// ---------------------------------------------------------------------------
// Counting.

// tokenCounter counts tokens with one encoding's codec, made once a run.
type tokenCounter struct {
	codec *codec.Codec
}

// findTokenEncoding is the entry of tokenEncodings named encoding.
func findTokenEncoding(encoding string) (tokenEncoding, error) {
	names := make([]string, len(tokenEncodings))
	for i, e := range tokenEncodings {
		names[i] = e.name
		if e.name == encoding {
			return e, nil
		}
	}
	return tokenEncoding{}, fmt.Errorf("--encoding must be %s, not %q", strings.Join(names, " or "), encoding)
}

// encoding is the name of the counter's encoding.
func (c *tokenCounter) encoding() string { return c.codec.GetName() }

// count is the number of tokens of raw, a JSON value, compacted first so
// that whitespace between its tokens does not count.
func (c *tokenCounter) count(raw json.RawMessage) (int, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return 0, fmt.Errorf("the hub's tool entry is not JSON: %w", err)
	}
	n, err := c.codec.Count(buf.String())
	if err != nil {
		return 0, fmt.Errorf("count the tokens of a tool entry: %w", err)
	}
	return n, nil
}

// ---------------------------------------------------------------------------
// Which server a tool is of.

// toolOwners tells which server a tool of the merged view is of, as the
// hub merges them: the servers in the hub's order (by name), a prefixed one
// exposing its tools as prefix+separator+name, an unprefixed one under the
// names of its own endpoint; an earlier server's name hides a later one's.
type toolOwners struct {
	sep     string
	servers []toolOwner
	// unlisted are the enabled unprefixed servers whose own tools could
	// not be listed; the tools no server claims may be theirs.
	unlisted []unlistedServer
}

// toolOwner is one server as toolOwners matches it.
type toolOwner struct {
	name   string
	prefix string          // "" for an unprefixed server
	own    map[string]bool // an unprefixed server's tool names
	// down is set for a server the hub has not connected: the hub may still
	// list its tools, but it claims a name only when no connected server does.
	down bool
}

// unlistedServer is an unprefixed server whose tools could not be listed,
// and why: its state, or the listing's error.
type unlistedServer struct {
	name, why string
}

// serverOf is the server that exposes the merged tool name, unknownServer
// when none does. Of the servers whose prefix matches, the longest prefix
// wins ("a___x" is of prefix "a_", not of "a" with separator "__"); a
// server that is not connected counts only when no connected one matches.
func (o *toolOwners) serverOf(name string) string {
	if o == nil {
		return unknownServer
	}
	for _, down := range []bool{false, true} {
		best := -1 // the index of the first match in the hub's order
		for i, s := range o.servers {
			if s.down != down {
				continue
			}
			if s.prefix == "" {
				if s.own[name] && best < 0 {
					best = i
				}
				continue
			}
			rest, ok := strings.CutPrefix(name, s.prefix+o.sep)
			if !ok || rest == "" {
				continue
			}
			if best < 0 || o.servers[best].prefix != "" && len(s.prefix) > len(o.servers[best].prefix) {
				best = i
			}
		}
		if best >= 0 {
			return o.servers[best].name
		}
	}
	return unknownServer
}

// toolOwners reads the registry the hub of s serves to tell which server
// each tool is of, and lists the tools of each connected unprefixed
// server's own endpoint, whose names its tools keep in the merged view.
// Without a registry file there is nothing to tell them apart by: nil.
func (a *app) toolOwners(ctx context.Context, s *hubSession) (*toolOwners, error) {
	reg, err := registry.LoadServing(a.configPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the registry does not load, and it is what tells which server each tool is of (see mcphub validate): %w", err)
	}
	o := &toolOwners{sep: reg.Hub.Separator}
	var st *hub.Status
	for _, srv := range reg.Servers {
		if !srv.Enabled || srv.Problem != "" {
			continue // the hub serves no tool of it
		}
		if st == nil {
			if st, err = fetchStatus(ctx, s.target); err != nil {
				return nil, err
			}
		}
		state := "not started"
		if ss := serverStatus(st, srv.Name); ss != nil {
			state = ss.State
		}
		owner := toolOwner{name: srv.Name, prefix: srv.Prefix, down: state != hub.StateConnected}
		if srv.Prefix == "" {
			if owner.down {
				o.unlisted = append(o.unlisted, unlistedServer{name: srv.Name, why: state})
				continue
			}
			if owner.own, err = a.ownToolNames(ctx, srv.Name); err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				// It went down since the status: its tools fall to the
				// servers that could not be listed.
				o.unlisted = append(o.unlisted, unlistedServer{name: srv.Name, why: err.Error()})
				continue
			}
		}
		o.servers = append(o.servers, owner)
	}
	return o, nil
}

// ownToolNames are the names of the tools of server's own endpoint.
func (a *app) ownToolNames(ctx context.Context, server string) (map[string]bool, error) {
	s, err := a.openHub(ctx, server, nil)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	tools, err := s.listAll(ctx, "tools/list")
	if err != nil {
		return nil, s.fail("list the tools of "+s.where(), err)
	}
	names := make(map[string]bool, len(tools))
	for _, n := range itemNames(tools) {
		names[n] = true
	}
	return names, nil
}

// noteUnknownTools says on stderr why n tools are counted under
// unknownServer: there is no registry file, some unprefixed servers could
// not be listed, or no server of the registry exposes them.
func (a *app) noteUnknownTools(owners *toolOwners, n int) {
	switch {
	case owners == nil:
		fmt.Fprintf(a.stderr, "note: without a registry file (%s does not exist) the %s of the hub cannot be grouped by server, counted under %s; point --config at the hub's registry\n",
			a.configPath, howMany(n, "tool"), unknownServer)
	case len(owners.unlisted) > 0:
		names := make([]string, len(owners.unlisted))
		for i, u := range owners.unlisted {
			names[i] = fmt.Sprintf("%s (%s)", u.name, u.why)
		}
		fmt.Fprintf(a.stderr, "note: %s of the hub, counted under %s, may be of the unprefixed servers whose tools could not be listed: %s\n",
			howMany(n, "tool"), unknownServer, strings.Join(names, ", "))
	default:
		fmt.Fprintf(a.stderr, "note: no server of %s exposes %s of the hub, counted under %s\n",
			a.configPath, howMany(n, "tool"), unknownServer)
	}
}

// ---------------------------------------------------------------------------
// The report.

// tokensReport is what tokens prints, and its --json answer.
type tokensReport struct {
	Encoding string       `json:"encoding"`
	Total    tokensTotal  `json:"total"`
	Servers  []serverCost `json:"servers"`
	Tools    []toolCost   `json:"tools"`
	Exceeds  []capExceed  `json:"exceeds"`
}

type tokensTotal struct {
	Tools  int `json:"tools"`
	Tokens int `json:"tokens"`
}

// serverCost is what one server's tools cost.
type serverCost struct {
	Name   string `json:"name"`
	Tools  int    `json:"tools"`
	Tokens int    `json:"tokens"`
}

// toolCost is what one tool costs.
type toolCost struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	Tokens int    `json:"tokens"`
}

// capExceed is a client's tool cap the hub's tools exceed.
type capExceed struct {
	Client string `json:"client"`
	Cap    int    `json:"cap"`
}

// tokenReport counts the tokens of items, the merged view's tools/list
// entries, and groups them by the server owners says each is of. Servers
// and tools are sorted by tokens, the most first, then by name.
func tokenReport(counter *tokenCounter, owners *toolOwners, items []json.RawMessage) (*tokensReport, error) {
	rep := &tokensReport{Encoding: counter.encoding(), Servers: []serverCost{}, Tools: []toolCost{}, Exceeds: []capExceed{}}
	for _, item := range items {
		var entry struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(item, &entry); err != nil {
			return nil, fmt.Errorf("the hub's tool entry is not a JSON object: %w", err)
		}
		n, err := counter.count(item)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", entry.Name, err)
		}
		rep.Tools = append(rep.Tools, toolCost{Name: entry.Name, Server: owners.serverOf(entry.Name), Tokens: n})
		rep.Total.Tools++
		rep.Total.Tokens += n
	}
	// The tools no server claims are of the one unprefixed server that
	// could not be listed, when there is exactly one.
	if owners != nil && len(owners.unlisted) == 1 {
		for i := range rep.Tools {
			if rep.Tools[i].Server == unknownServer {
				rep.Tools[i].Server = owners.unlisted[0].name
			}
		}
	}
	byServer := map[string]*serverCost{}
	for _, t := range rep.Tools {
		sc := byServer[t.Server]
		if sc == nil {
			sc = &serverCost{Name: t.Server}
			byServer[t.Server] = sc
		}
		sc.Tools++
		sc.Tokens += t.Tokens
	}
	for _, sc := range byServer {
		rep.Servers = append(rep.Servers, *sc)
	}
	slices.SortFunc(rep.Servers, func(x, y serverCost) int {
		return cmp.Or(cmp.Compare(y.Tokens, x.Tokens), strings.Compare(x.Name, y.Name))
	})
	slices.SortFunc(rep.Tools, func(x, y toolCost) int {
		return cmp.Or(cmp.Compare(y.Tokens, x.Tokens), strings.Compare(x.Name, y.Name))
	})
	for _, c := range toolCaps {
		if rep.Total.Tools > c.cap {
			rep.Exceeds = append(rep.Exceeds, capExceed{Client: c.client, Cap: c.cap})
		}
	}
	return rep, nil
}

// unknownTools counts the tools that match no server.
func (r *tokensReport) unknownTools() int {
	n := 0
	for _, t := range r.Tools {
		if t.Server == unknownServer {
			n++
		}
	}
	return n
}

// print prints the report as text: the servers' table with the total, the
// client caps, and with tools every tool's table.
func (r *tokensReport) print(w io.Writer, tools bool) {
	rows := make([][]string, 0, len(r.Servers)+1)
	for _, s := range r.Servers {
		rows = append(rows, []string{s.Name, fmt.Sprint(s.Tools), fmt.Sprint(s.Tokens)})
	}
	rows = append(rows, []string{"TOTAL", fmt.Sprint(r.Total.Tools), fmt.Sprint(r.Total.Tokens)})
	printNumberTable(w, []string{"SERVER", "TOOLS", "TOKENS"}, rows, 1)
	fmt.Fprintln(w)
	exceeded := 0
	for _, c := range toolCaps {
		if r.Total.Tools > c.cap {
			fmt.Fprintf(w, "exceeds %s's cap of %s (has %d)\n", c.client, c.wording(true), r.Total.Tools)
			exceeded++
		}
	}
	if exceeded == 0 {
		caps := make([]string, len(toolCaps))
		for i, c := range toolCaps {
			caps[i] = c.client + " " + c.wording(false)
		}
		fmt.Fprintf(w, "fits every known client's tool cap (%s)\n", strings.Join(caps, ", "))
	}
	fmt.Fprintf(w, "counted with %s; Claude and other models count with their own tokenizers, so these are estimates\n", r.Encoding)
	if tools && len(r.Tools) > 0 {
		fmt.Fprintln(w)
		rows := make([][]string, len(r.Tools))
		for i, t := range r.Tools {
			rows[i] = []string{t.Name, t.Server, fmt.Sprint(t.Tokens)}
		}
		printNumberTable(w, []string{"TOOL", "SERVER", "TOKENS"}, rows, 2)
	}
}

// printNumberTable prints rows of names and numbers, columns padded to
// their widest cell and two spaces apart; the columns from numbers on hold
// numbers, aligned right.
func printNumberTable(w io.Writer, header []string, rows [][]string, numbers int) {
	all := append([][]string{header}, rows...)
	widths := make([]int, len(header))
	for _, r := range all {
		for i, cell := range r {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	for _, r := range all {
		cells := make([]string, len(r))
		for i, cell := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			if i >= numbers {
				cells[i] = pad + cell
			} else {
				cells[i] = cell + pad
			}
		}
		fmt.Fprintln(w, strings.TrimRight(strings.Join(cells, "  "), " "))
	}
}
