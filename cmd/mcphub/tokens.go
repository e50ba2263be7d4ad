package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/termtext"
	"github.com/mcphub/mcphub/internal/tokencount"
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

// tokensOptions are the flags of tokens.
type tokensOptions struct {
	asJSON   bool
	tools    bool
	encoding string
	profile  string
}

func newTokensCmd(a *app) *cobra.Command {
	o := tokensOptions{encoding: tokencount.Encodings[0].Name}
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
		return tokencount.EncodingNames(), cobra.ShellCompDirectiveNoFileComp
	})
	cmd.RegisterFlagCompletionFunc("profile", a.completeProfileFlag)
	return cmd
}

// tokens is the tokens command.
func (a *app) tokens(ctx context.Context, o tokensOptions) error {
	enc, ok := tokencount.LookupEncoding(o.encoding)
	if !ok {
		return fmt.Errorf("--encoding must be %s, not %q", strings.Join(tokencount.EncodingNames(), " or "), o.encoding)
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
	counter := enc.NewCounter()
	rep, err := counter.Report(cat)
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
	if n := rep.UnknownTools(); n > 0 {
		fmt.Fprintf(a.stderr, "note: the hub's catalog names no server for %s, counted under %s\n", termtext.HowMany(n, "tool"), tokencount.UnknownServer)
	}
	if o.asJSON {
		return a.printJSON(rep)
	}
	printTokensReport(a.stdout, rep, o.tools)
	return nil
}

// profileCosts counts the tools of each profile the hub's status st lists,
// asking the hub at t for their catalogs within one hubclient.ListTimeout in all.
// A profile with a problem serves nothing, so it is not asked for; one
// whose catalog cannot be had is noted on stderr and not counted.
func (a *app) profileCosts(ctx context.Context, t hubclient.Target, counter *tokencount.Counter, st *api.Status) ([]tokencount.ProfileCost, error) {
	ctx, cancel := context.WithTimeout(ctx, hubclient.ListTimeout)
	defer cancel()
	var costs []tokencount.ProfileCost
	for _, p := range st.Profiles {
		pc := tokencount.ProfileCost{Name: p.Name, Endpoint: hubclient.View{Profile: p.Name}.Path(), Mode: p.Mode, Problem: p.Problem}
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
			prep, err := counter.Report(pcat)
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
// The report.

// searchSaving says what search mode saves against listing the view's
// tools in full: "in full its 5 tools would cost 275 tokens; search mode
// saves 18%", to the nearest percent; about the same when the two differ
// by less than 1%, and what it costs more when it does.
func searchSaving(listed, full tokencount.Total) string {
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

// printTokensReport prints the report r as text: with a profile, a line naming it; the
// servers' table with the total (in search mode the listed tools' table,
// the cost in full and the servers' table of that), the client caps, with
// tools every tool's table, and the profiles' table.
func printTokensReport(w io.Writer, r *tokencount.Report, tools bool) {
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
	for _, c := range tokencount.ToolCaps {
		if r.Total.Tools > c.Cap {
			fmt.Fprintf(w, "exceeds %s's cap of %s (has %d)\n", c.Client, c.Wording(true), r.Total.Tools)
			exceeded++
		}
	}
	if exceeded == 0 {
		caps := make([]string, len(tokencount.ToolCaps))
		for i, c := range tokencount.ToolCaps {
			caps[i] = c.Client + " " + c.Wording(false)
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
