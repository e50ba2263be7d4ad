package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/internal/tokencount"
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
	t, _, err := a.statusTarget()
	if err != nil {
		return err
	}
	rep, st, err := t.CountTokens(ctx, enc, o.profile, a.stderr)
	if interrupted() {
		return a.interruptedErr(nil)
	}
	if err != nil {
		return err
	}
	var ps *api.ProfileStatus
	if st != nil {
		a.noteDown(st, o.profile, "tools")
		ps = hubclient.FindProfile(st, o.profile)
	}
	rep.WriteNotes(a.stderr, ps)
	if o.asJSON {
		return a.printJSON(rep)
	}
	rep.WriteText(a.stdout, o.tools)
	return nil
}
