package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/api"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/mcpterm"
)

// The tools, resources and prompts commands are MCP clients of the running
// hub; what they do once their flags are read is mcpterm's (see
// mcpterm.Client). This file holds what the commands share: the client,
// its exit codes, and the ls commands' flags.

// The hooks a test stands in for a terminal, or shortens an interrupted
// command's wait with; isTerminal is probe's too.
var (
	isTerminal          = mcpterm.IsTerminal
	virtualTerminal     = mcpterm.EnableVirtualTerminal
	cliCancelNotifyWait = mcpterm.DefaultCancelWait
	withInterrupt       = mcpterm.WithInterrupt
)

// mcp is the terminal MCP client of a command: it prints on a's stdout and
// stderr and finds the hub as status finds it.
func (a *app) mcp() *mcpterm.Client {
	return &mcpterm.Client{
		Stdout: a.stdout, Stderr: a.stderr,
		Target: func() (hubclient.Target, error) {
			t, _, err := a.statusTarget()
			return t, err
		},
		Options:    hubclient.Options{Version: mcphubVersion(), ConfigPath: a.configPath},
		CancelWait: cliCancelNotifyWait,
		IsTerminal: isTerminal, VirtualTerminal: virtualTerminal,
	}
}

// exitCode is err with mcpterm's exit statuses as the root command exits
// with them.
func exitCode(err error) error {
	var e mcpterm.ExitError
	if errors.As(err, &e) {
		return exitError{code: e.Code, why: e.Why}
	}
	return err
}

// interruptedErr is the exit of a command the user interrupted (see
// mcpterm.Client.Interrupted).
func (a *app) interruptedErr(s *hubclient.Session) error { return exitCode(a.mcp().Interrupted(s)) }

// noteDown says which servers of st are not connected, so their kind are
// missing (see mcpterm.Client.NoteDown).
func (a *app) noteDown(st *api.Status, profile, kind string) { a.mcp().NoteDown(st, profile, kind) }

// listCmd completes cmd, which has its texts and Args, as a command that
// lists with run: tools, prompts and resources themselves, which take no
// argument and list the merged endpoint, and their ls [SERVER], which lists
// server's own endpoint when given one. --profile NAME lists the profile's
// endpoint instead. jsonUsage is what its --json does.
func (a *app) listCmd(cmd *cobra.Command, jsonUsage string, run func(c *mcpterm.Client, ctx context.Context, v hubclient.View, asJSON bool) error) *cobra.Command {
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
		return exitCode(run(a.mcp(), cmd.Context(), v, asJSON))
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, jsonUsage)
	cmd.Flags().StringVar(&profile, "profile", "", "list what a client of the profile's endpoint (/profiles/NAME/mcp) is given")
	cmd.RegisterFlagCompletionFunc("profile", a.completeProfileFlag)
	return cmd
}

// completeProfileFlag completes the value of a --profile flag: the
// registry's profiles, each described by its mode.
func (a *app) completeProfileFlag(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, p := range mcpterm.ProfileChoices(a.configPath, prefix) {
		out = append(out, cobra.CompletionWithDesc(p.Name, p.Desc))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
