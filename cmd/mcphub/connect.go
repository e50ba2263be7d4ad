package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/clientconf"
	"github.com/mcphub/mcphub/hubclient"
)

const connectLong = `Print the configuration entry that points a client at this hub's /mcp
endpoint, including the Authorization header when [hub] auth = "token".
With --stdio (and always for Claude Desktop, which runs only stdio servers
from its file) the entry runs "mcphub stdio" by its absolute path instead.

With --profile NAME the entry points at the profile's endpoint,
/profiles/NAME/mcp (or runs "mcphub stdio --profile NAME"): the client sees
the servers and tools [profiles.NAME] in the registry selects, or in search
mode three tools that find and call them. The entry keeps its name (--name),
so a client has one entry for the hub, whichever view it points at.

Cursor uses about the first 40 tools it is given, Windsurf at most 100, and
VS Code Copilot refuses a request with more than 128. For these clients
connect asks the running hub how many tools the endpoint lists, and warns
when they are more; with --profile and no hub running, it says the count
could not be checked.

Clients and the files --write edits (--file picks another):
  claude          Claude Code     ~/.claude.json
  claude-desktop  Claude Desktop  claude_desktop_config.json in the Claude folder
                                  of the user config directory
  cursor          Cursor          ~/.cursor/mcp.json
  vscode          VS Code         .vscode/mcp.json in the current directory
  windsurf        Windsurf        ~/.codeium/windsurf/mcp_config.json
  gemini          Gemini CLI      ~/.gemini/settings.json
  zed             Zed             ~/.config/zed/settings.json (Windows: %AppData%\Zed)
  codex           Codex           $CODEX_HOME/config.toml or ~/.codex/config.toml

--write adds the hub's entry, or brings an existing one up to date by
changing only what mcphub writes there (type, url, serverUrl, httpUrl,
headers, http_headers, command, args); the client's own settings on it,
comments, trailing commas, the order of members and every other entry stay
as they were. The old file is kept beside it as
FILE.mcphub-backup-<UTC time>. Running it again changes nothing.

--move (with --write) also removes the entries the hub now serves, so no
server runs twice: those that run just what an enabled server of the
registry runs (the same command, args, env and working directory, or the
same URL and headers, with no tool filter on either side), and older
entries under another name for this hub's /mcp endpoint (or mcphub stdio
without --server and --profile) or for the profile connected (its
/profiles/NAME/mcp, or mcphub stdio --profile NAME). An entry that only
shares the command and args, or the URL, is kept with a note saying what
differs; so is one that points at a single server of this hub, or at
another profile. The others are kept and listed; mcphub import FILE adds
them to the hub.

--json (with --write) prints one JSON object instead: client, file, wrote,
backup, added or updated (the entry's name), removed [{name, reason}],
kept [{name, note}], notes and warnings (such as a tool cap the endpoint
exceeds). It holds no token or other secret value.`

// connectOptions are mcphub connect's flags.
type connectOptions struct {
	write, stdio, move, json bool
	name, file, profile      string
}

func newConnectCmd(a *app) *cobra.Command {
	var o connectOptions
	cmd := &cobra.Command{
		Use:       "connect CLIENT",
		Short:     "Print (or --write) the config that points a client at this hub",
		Long:      connectLong,
		Args:      cobra.ExactArgs(1),
		ValidArgs: clientconf.Names(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.connect(cmd.Context(), args[0], o)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.write, "write", false, "add the entry to the client's config file (keeping a backup)")
	fl.BoolVar(&o.move, "move", false, "with --write: also remove the client's entries for servers the hub serves")
	fl.BoolVar(&o.stdio, "stdio", false, "write an entry that runs `mcphub stdio` instead of the HTTP one")
	fl.BoolVar(&o.json, "json", false, "with --write: print what was done as one JSON object, for scripts")
	fl.StringVar(&o.name, "name", "mcphub", "the entry's name in the client's config")
	fl.StringVar(&o.file, "file", "", "the client's config file, when it is not in the usual place")
	fl.StringVar(&o.profile, "profile", "", "point the client at a profile's endpoint (/profiles/NAME/mcp) instead of /mcp")
	cmd.RegisterFlagCompletionFunc("profile", a.completeProfileFlag)
	return cmd
}

func (a *app) connect(ctx context.Context, client string, o connectOptions) error {
	c, err := clientconf.Lookup(client)
	if err != nil {
		return err
	}
	if o.move && !o.write {
		return errors.New("--move changes the client's file, so it needs --write")
	}
	if o.json && !o.write {
		return errors.New("--json reports what --write did, so it needs --write")
	}
	if o.name == "" {
		return errors.New("--name must not be empty")
	}
	reg, err := a.loadRegistry()
	if err != nil {
		return a.printRegistryErrors(err)
	}
	view := hubclient.View{Profile: o.profile}
	if err := a.checkRegistryView(reg, view); err != nil {
		return err
	}
	stdio := o.stdio || c.StdioOnly()
	var hubURL string
	var headers map[string]string
	var hasToken bool
	if !stdio {
		if hubURL, headers, hasToken, err = a.locator().Endpoint(reg, view); err != nil {
			return err
		}
	}
	e, err := clientconf.Hub{Config: a.configPath, DataDir: a.dataDir, Warn: a.stderr}.Entry(c, stdio, hubURL, headers, o.profile)
	if err != nil {
		return err
	}
	warning, note := a.locator().CheckToolCap(ctx, reg, c.Name, o.profile)
	file := o.file
	if file == "" {
		if file, err = c.Path(); err != nil {
			return err
		}
	}
	if !o.write {
		c.WriteEntry(a.stdout, file, o.name, e, stdio)
		if warning != "" {
			fmt.Fprintf(a.stderr, "warning: %s\n", warning)
		}
		if note != "" {
			fmt.Fprintf(a.stderr, "note: %s\n", note)
		}
		return nil
	}
	var move *clientconf.Move
	if o.move {
		move = &clientconf.Move{Registry: reg, Self: a.locator().Self(reg.Path, reg.Hub.Listen), Profile: o.profile}
	}
	res, err := clientconf.Write(c, file, o.name, e, move)
	if errors.Is(err, clientconf.ErrNotEditable) {
		// The entry is not where mcphub can edit it; the user replaces it.
		c.WriteNotEditable(a.stdout, res, file, o.name, e, err, o.json)
		return exitError{code: 1}
	}
	if err != nil {
		return err
	}
	res.AddNotes(c, hasToken, warning, note)
	if o.json {
		res.WriteJSON(a.stdout)
		return nil
	}
	res.WriteText(a.stdout, a.stderr)
	return nil
}
