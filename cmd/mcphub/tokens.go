package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/jsonrpc"
	"github.com/mcphub/mcphub/internal/termtext"
	"github.com/mcphub/mcphub/registry"
)

func init() { commands = append(commands, newTokensCmd) }

const tokensLong = `Count the tokens the running hub's tools cost in a model's context: every
tool a client is given comes with its entry of tools/list (name,
description, input schema ...), which the client puts in the model's context
on every request. tokens asks the hub for the tools of the merged endpoint
(/mcp), or with --profile NAME of that profile's endpoint
(/profiles/NAME/mcp), as it sends them to a client of that endpoint, counts
the tokens of each entry's JSON (compacted, so that indentation does not
count), and adds them up per server. Without --profile, when the hub serves
profiles, a last table gives each profile's count ("-" for a profile whose
table has a problem: the hub serves nothing for it).

A profile in search mode ([profiles.NAME] mode = "search") gives its clients
three tools instead of its catalog: search_tools, describe_tool and
call_tool, which find, describe and call the profile's tools on demand.
tokens --profile counts those three, which is what every request costs, and
says what the profile's tools would cost listed in full, and how much search
mode saves.

The counts come from a real tokenizer, o200k_base (GPT-4o and later) by
default, or cl100k_base (GPT-4). Claude and other models use their own
tokenizers, so the counts are estimates of theirs: use them to compare
servers and tools, and to see what a change of the registry saves.

Some clients cap the tools they take: Cursor uses about the first 40,
Windsurf at most 100, and VS Code Copilot refuses a request with more than
128. tokens says which of these caps the tools a client is given exceed.

--json prints one object: encoding, profile (with --profile), endpoint,
mode, total (the tools a client is given, and their tokens), full (the
view's tools listed in full: the same as total but in search mode), listed
(search mode: the three tools, with their tokens), servers and tools (the
view's tools, each with its server and tokens, sorted by tokens), exceeds
(the caps total exceeds) and, without --profile, profiles (each profile's
name, endpoint, mode, total and full, and its problem, or the error that
kept it from being counted).`

const tokensExample = `  mcphub tokens                  # tokens per server, the total, the caps and each profile
  mcphub tokens -v               # and every tool's tokens
  mcphub tokens --profile coding # what a client of /profiles/coding/mcp is given
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

// unknownServer is the server a listed tool is counted under when the
// hub's catalog names no server for it.
const unknownServer = "?"

// toolCap is a client's limit on the number of tools it takes.
type toolCap struct {
	id         string // the client as connect names it: "cursor"
	client     string // the client as a sentence names it: "Cursor"
	cap        int
	about      bool // the cap is approximate
	perRequest bool // the cap applies to each request
}

// toolCaps are the known clients' tool caps.
var toolCaps = []toolCap{
	{id: "cursor", client: "Cursor", cap: 40, about: true},
	{id: "windsurf", client: "Windsurf", cap: 100},
	{id: "vscode", client: "VS Code Copilot", cap: 128, perRequest: true},
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

// does says what the client does with the tools it is given: "Cursor uses
// about the first 40".
func (c toolCap) does() string {
	switch {
	case c.about:
		return fmt.Sprintf("%s uses about the first %d", c.client, c.cap)
	case c.perRequest:
		return fmt.Sprintf("%s refuses a request with more than %d", c.client, c.cap)
	}
	return fmt.Sprintf("%s takes at most %d", c.client, c.cap)
}

// tokensOptions are the flags of tokens.
type tokensOptions struct {
	asJSON   bool
	tools    bool
	encoding string
	profile  string
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
	fl.StringVar(&o.profile, "profile", "", "count what a client of the profile's endpoint (/profiles/NAME/mcp) is given")
	cmd.RegisterFlagCompletionFunc("encoding", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		names := make([]string, len(tokenEncodings))
		for i, e := range tokenEncodings {
			names[i] = e.name
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	cmd.RegisterFlagCompletionFunc("profile", a.completeProfileFlag)
	return cmd
}

// tokens is the tokens command.
func (a *app) tokens(ctx context.Context, o tokensOptions) error {
	enc, err := findTokenEncoding(o.encoding)
	if err != nil {
		return err
	}
	ctx, interrupted, stop := withInterrupt(ctx)
	defer stop()
	fail := func(err error) error {
		if interrupted() {
			return a.interruptedErr(nil)
		}
		return err
	}
	t, _, err := a.statusTarget()
	if err != nil {
		return err
	}
	cat, err := t.Catalog(ctx, o.profile, hubclient.ListTimeout)
	if err != nil {
		return fail(err)
	}
	// The status says which servers are down and which profiles there
	// are; without it the counts stand alone.
	st, _ := t.Status(ctx)
	if interrupted() {
		return a.interruptedErr(nil)
	}
	// The vocabulary is decoded only now that the hub has answered.
	counter := &tokenCounter{codec: enc.codec()}
	rep, err := tokenReport(counter, cat)
	if err != nil {
		return err
	}
	rep.Profile = o.profile
	if o.profile == "" && st != nil {
		if rep.Profiles, err = a.profileCosts(ctx, t, counter, st); err != nil {
			return fail(err)
		}
	}
	if st != nil {
		a.noteDown(st, o.profile, "tools")
		if ps := hubclient.FindProfile(st, o.profile); ps != nil && ps.Problem != "" {
			fmt.Fprintf(a.stderr, "note: profile %s serves nothing until its table is fixed (mcphub validate shows the problems); these are the tools it selects meanwhile\n", o.profile)
		}
	}
	if n := rep.unknownTools(); n > 0 {
		fmt.Fprintf(a.stderr, "note: the hub's catalog names no server for %s, counted under %s\n", termtext.HowMany(n, "tool"), unknownServer)
	}
	if o.asJSON {
		return a.printJSON(rep)
	}
	rep.print(a.stdout, o.tools)
	return nil
}

// profileCosts counts the tools of each profile the hub's status st lists,
// asking the hub at t for their catalogs within one hubclient.ListTimeout in all.
// A profile with a problem serves nothing, so it is not asked for; one
// whose catalog cannot be had is noted on stderr and not counted.
func (a *app) profileCosts(ctx context.Context, t hubclient.Target, counter *tokenCounter, st *api.Status) ([]profileCost, error) {
	ctx, cancel := context.WithTimeout(ctx, hubclient.ListTimeout)
	defer cancel()
	var costs []profileCost
	for _, p := range st.Profiles {
		pc := profileCost{Name: p.Name, Endpoint: hubclient.View{Profile: p.Name}.Path(), Mode: p.Mode, Problem: p.Problem}
		if p.Problem != "" {
			costs = append(costs, pc)
			continue
		}
		pcat, err := t.Catalog(ctx, p.Name, hubclient.ListTimeout)
		if err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil, err
			}
			pc.Error = err.Error()
			fmt.Fprintf(a.stderr, "note: profile %s is not counted: %v\n", p.Name, err)
		} else {
			prep, err := tokenReport(counter, pcat)
			if err != nil {
				return nil, fmt.Errorf("profile %s: %w", p.Name, err)
			}
			pc.Endpoint, pc.Mode, pc.Total, pc.Full = prep.Endpoint, prep.Mode, prep.Total, prep.Full
		}
		costs = append(costs, pc)
	}
	return costs, nil
}

// ---------------------------------------------------------------------------
// The hub's catalog.

// ---------------------------------------------------------------------------
// Counting.

// tokenCounter counts tokens with one encoding's codec, made once a run.
type tokenCounter struct {
	codec *codec.Codec
	// counted are the tokens of the entries counted so far, by their JSON
	// as the hub sent it: a tool of several views (/mcp, a profile in
	// search mode) is tokenized once.
	counted map[string]int
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
	if n, ok := c.counted[string(raw)]; ok {
		return n, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return 0, fmt.Errorf("the hub's tool entry is not JSON: %w", err)
	}
	n, err := c.codec.Count(buf.String())
	if err != nil {
		return 0, fmt.Errorf("count the tokens of a tool entry: %w", err)
	}
	if c.counted == nil {
		c.counted = map[string]int{}
	}
	c.counted[string(raw)] = n
	return n, nil
}

// ---------------------------------------------------------------------------
// The report.

// tokensReport is what tokens prints, and its --json answer.
type tokensReport struct {
	Encoding string `json:"encoding"`
	// Profile is the profile counted, "" for /mcp.
	Profile  string `json:"profile,omitempty"`
	Endpoint string `json:"endpoint"`
	Mode     string `json:"mode"`
	// Total is what the tools a client is given cost; Full what the
	// view's tools would cost listed in full (Total, but in search mode).
	Total tokensTotal `json:"total"`
	Full  tokensTotal `json:"full"`
	// Listed are the tools a client is given in search mode.
	Listed []listedCost `json:"listed,omitempty"`
	// Servers and Tools are the view's tools, by server and one by one.
	Servers  []serverCost  `json:"servers"`
	Tools    []toolCost    `json:"tools"`
	Exceeds  []capExceed   `json:"exceeds"`
	Profiles []profileCost `json:"profiles,omitempty"`
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

// listedCost is what one of the search tools costs.
type listedCost struct {
	Name   string `json:"name"`
	Tokens int    `json:"tokens"`
}

// capExceed is a client's tool cap the tools a client is given exceed.
type capExceed struct {
	Client string `json:"client"`
	Cap    int    `json:"cap"`
}

// profileCost is what one profile's tools cost.
type profileCost struct {
	Name     string      `json:"name"`
	Endpoint string      `json:"endpoint"`
	Mode     string      `json:"mode"`
	Total    tokensTotal `json:"total"`
	Full     tokensTotal `json:"full"`
	// Problem says what is wrong with the profile's table: its endpoint
	// serves nothing until it is fixed.
	Problem string `json:"problem,omitempty"`
	// Error says why the profile could not be counted.
	Error string `json:"error,omitempty"`
}

// countedItem is one tool entry and its tokens.
type countedItem struct {
	name   string
	tokens int
}

// countItems counts the tokens of tool entries.
func countItems(counter *tokenCounter, items []json.RawMessage) ([]countedItem, error) {
	out := make([]countedItem, len(items))
	for i, item := range items {
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
		out[i] = countedItem{name: entry.Name, tokens: n}
	}
	return out, nil
}

// tokenReport counts the tokens of the catalog's tools: those a client is
// given (cat.Listed) and, in search mode, the view's own tools, grouped by
// the server the catalog names for each. Servers and tools are sorted by
// tokens, the most first, then by name.
func tokenReport(counter *tokenCounter, cat *api.Catalog) (*tokensReport, error) {
	rep := &tokensReport{Encoding: counter.encoding(), Endpoint: cat.Endpoint, Mode: cat.Mode,
		Servers: []serverCost{}, Tools: []toolCost{}, Exceeds: []capExceed{}}
	listed, err := countItems(counter, cat.Listed)
	if err != nil {
		return nil, err
	}
	for _, it := range listed {
		rep.Total.Tools++
		rep.Total.Tokens += it.tokens
	}
	if cat.Mode == registry.ModeSearch {
		items := make([]json.RawMessage, len(cat.Tools))
		for i, t := range cat.Tools {
			items[i] = t.Item
		}
		all, err := countItems(counter, items)
		if err != nil {
			return nil, err
		}
		for i, it := range all {
			rep.Tools = append(rep.Tools, toolCost{Name: it.name, Server: cat.Tools[i].Server, Tokens: it.tokens})
		}
		for _, it := range listed {
			rep.Listed = append(rep.Listed, listedCost{Name: it.name, Tokens: it.tokens})
		}
		slices.SortFunc(rep.Listed, func(x, y listedCost) int {
			return cmp.Or(cmp.Compare(y.Tokens, x.Tokens), strings.Compare(x.Name, y.Name))
		})
	} else {
		serverOf := make(map[string]string, len(cat.Tools))
		for _, t := range cat.Tools {
			if name, ok := jsonrpc.StringMember(t.Item, "name"); ok {
				serverOf[name] = t.Server
			}
		}
		for _, it := range listed {
			rep.Tools = append(rep.Tools, toolCost{Name: it.name, Server: cmp.Or(serverOf[it.name], unknownServer), Tokens: it.tokens})
		}
	}
	byServer := map[string]*serverCost{}
	for _, t := range rep.Tools {
		rep.Full.Tools++
		rep.Full.Tokens += t.Tokens
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

// unknownTools counts the tools the catalog names no server for.
func (r *tokensReport) unknownTools() int {
	n := 0
	for _, t := range r.Tools {
		if t.Server == unknownServer {
			n++
		}
	}
	return n
}

// searchSaving says what search mode saves against listing the view's
// tools in full: "in full its 5 tools would cost 275 tokens; search mode
// saves 18%", to the nearest percent; about the same when the two differ
// by less than 1%, and what it costs more when it does.
func searchSaving(listed, full tokensTotal) string {
	if full.Tools == 0 {
		return "its servers offer no tools yet, so search mode finds none (see mcphub status)"
	}
	msg := fmt.Sprintf("in full its %s would cost %d tokens; ", termtext.HowMany(full.Tools, "tool"), full.Tokens)
	diff := full.Tokens - listed.Tokens
	switch {
	case 100*max(diff, -diff) < full.Tokens:
		return msg + "search mode costs about the same"
	case diff < 0:
		return msg + fmt.Sprintf("search mode costs %s more, as its tools are few", termtext.HowMany(-diff, "token"))
	}
	return msg + fmt.Sprintf("search mode saves %d%%", (200*diff+full.Tokens)/(2*full.Tokens))
}

// print prints the report as text: with a profile, a line naming it; the
// servers' table with the total (in search mode the listed tools' table,
// the cost in full and the servers' table of that), the client caps, with
// tools every tool's table, and the profiles' table.
func (r *tokensReport) print(w io.Writer, tools bool) {
	serverRows := func() [][]string {
		rows := make([][]string, 0, len(r.Servers)+1)
		for _, s := range r.Servers {
			rows = append(rows, []string{s.Name, fmt.Sprint(s.Tools), fmt.Sprint(s.Tokens)})
		}
		return append(rows, []string{"TOTAL", fmt.Sprint(r.Full.Tools), fmt.Sprint(r.Full.Tokens)})
	}
	if r.Profile != "" {
		fmt.Fprintf(w, "profile %s (%s, %s mode): a client is given %s\n\n", r.Profile, r.Endpoint, r.Mode, termtext.HowMany(r.Total.Tools, "tool"))
	}
	if r.Mode == registry.ModeSearch {
		rows := make([][]string, 0, len(r.Listed)+1)
		for _, t := range r.Listed {
			rows = append(rows, []string{t.Name, fmt.Sprint(t.Tokens)})
		}
		rows = append(rows, []string{"TOTAL", fmt.Sprint(r.Total.Tokens)})
		printNumberTable(w, []string{"TOOL", "TOKENS"}, rows, 1)
		fmt.Fprintf(w, "\n%s\n", searchSaving(r.Total, r.Full))
		if len(r.Servers) > 0 {
			fmt.Fprintln(w)
			printNumberTable(w, []string{"SERVER", "TOOLS", "TOKENS"}, serverRows(), 1)
		}
	} else {
		printNumberTable(w, []string{"SERVER", "TOOLS", "TOKENS"}, serverRows(), 1)
	}
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
	if len(r.Profiles) > 0 {
		fmt.Fprintln(w)
		rows := make([][]string, len(r.Profiles))
		for i, p := range r.Profiles {
			listedTools, listedTokens, fullTools, fullTokens := fmt.Sprint(p.Total.Tools), fmt.Sprint(p.Total.Tokens), "-", "-"
			switch {
			case p.Problem != "":
				listedTools, listedTokens = "-", "-"
			case p.Error != "":
				listedTools, listedTokens = "?", "?"
			case p.Mode == registry.ModeSearch:
				fullTools, fullTokens = fmt.Sprint(p.Full.Tools), fmt.Sprint(p.Full.Tokens)
			}
			rows[i] = []string{p.Name, p.Mode, listedTools, listedTokens, fullTools, fullTokens}
		}
		printNumberTable(w, []string{"PROFILE", "MODE", "TOOLS", "TOKENS", "TOOLS IN FULL", "TOKENS IN FULL"}, rows, 2)
		for _, p := range r.Profiles {
			if p.Problem != "" {
				fmt.Fprintf(w, "profile %s serves nothing until its table is fixed (mcphub validate shows the problems)\n", p.Name)
			}
		}
		fmt.Fprintln(w, "mcphub tokens --profile NAME counts one profile's tools by server")
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
