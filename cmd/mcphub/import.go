package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/clientconf"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/registry"
)

const importLong = `Read the MCP server list of another client's config and add those servers
to the registry. These files are read:

  client          file                                              servers under
  Claude Desktop  claude_desktop_config.json                        mcpServers
                  (macOS: ~/Library/Application Support/Claude/,
                  Windows: %APPDATA%\Claude\)
  Claude Code     ~/.claude.json, or .mcp.json in a project         mcpServers
  Cursor          ~/.cursor/mcp.json, or .cursor/mcp.json           mcpServers
  VS Code         .vscode/mcp.json or the profile's mcp.json        servers
                  settings.json                                     mcp.servers
  Windsurf        ~/.codeium/windsurf/mcp_config.json               mcpServers
  Gemini CLI      ~/.gemini/settings.json, or .gemini/settings.json mcpServers
  Zed             ~/.config/zed/settings.json                       context_servers
  Codex           ~/.codex/config.toml, or .codex/config.toml       [mcp_servers.NAME]

A .toml file is read as Codex's config; any other file as JSON (comments and
trailing commas allowed), or as TOML when it is not JSON. Remote entries may
use url, Windsurf's serverUrl or Gemini's httpUrl (Gemini's plain url is the
legacy SSE transport).

Claude Code's ~/.claude.json also lists servers per project, under
projects.PATH.mcpServers; those are imported too. A name used twice keeps
the top-level entry, else the first project's, and import notes the ones it
skipped.

Names are made valid for mcphub (a-z, 0-9, '-'); what cannot be mapped is
reported and skipped. An entry that points at this hub (its URL, or the URL
it runs mcp-remote with, reaches an address the hub listens on, or it runs
"mcphub stdio" on this registry) is skipped: the hub cannot be its own
upstream. Servers whose names exist already are skipped unless --force
replaces them.

A literal secret in env or headers (an env value whose key names a token,
key, secret or password, the password of a URL in an env value, or the
credential of an Authorization, X-API-Key or other token header) is written
as a ${VAR} reference instead, named after its key and never after a
variable that means something else already; import says which variable to
set, never the value. A secret in args or in a server's url stays as it is
written (mcphub expands no variables there); import notes a URL password it
sees there. --keep-secrets writes the literals as they are.

A server that refers to a variable the hub's environment lacks (asked of
the running hub, or of this shell when none runs) is added disabled, with
the variables to set and the command that enables it.

--json prints one object, without any env or header value:
  {"file": "claude_desktop_config.json", "registry": "/path/to/hub.toml",
   "added": ["github"], "disabled": [{"name": "github", "reason": "..."}],
   "skipped": [{"name": "notes", "reason": "..."}], "failed": [],
   "secrets": [{"var": "GITHUB_TOKEN", "where": "servers.github.env..."}],
   "notes": ["..."]}
disabled lists the added servers that were added disabled; secrets, the
variables that now stand for a literal secret (their names, never values);
notes, what was printed on stderr. When a server could not be added, the
object also has "error" and the exit status is 1.`

func newImportCmd(a *app) *cobra.Command {
	var force, keepSecrets, asJSON bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Add the servers of another MCP client's config (Claude, Cursor, VS Code, Windsurf, Gemini, Zed, Codex)",
		Long:  importLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			self, taken, hubAt := a.importHub()
			res, err := clientconf.Import(data, clientconf.ImportOptions{
				Hub:         self,
				KeepSecrets: keepSecrets,
				TOML:        strings.EqualFold(filepath.Ext(file), ".toml"),
				LookupEnv:   os.LookupEnv,
				TakenVars:   taken,
			})
			if err != nil {
				return err
			}
			var disabled map[string]string
			notes := a.captureWarnings(func() {
				res.WriteNotes(a.stderr, file)
				if err = a.ensureRegistry(); err != nil {
					return
				}
				ctx := cmd.Context()
				if ctx == nil {
					ctx = context.Background()
				}
				disabled = a.disableUnset(ctx, hubAt, &res, file)
			})
			if err != nil {
				return err
			}
			out := a.stdout
			if asJSON {
				out = io.Discard
			}
			rep := clientconf.AddImported(a.configPath, res, disabled, force, out, a.stderr)
			if asJSON {
				rep.File, rep.Notes = file, notes
				if err := a.printJSON(rep); err != nil {
					return err
				}
			}
			if rep.Error != "" {
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace servers whose names exist already")
	cmd.Flags().BoolVar(&keepSecrets, "keep-secrets", false, "write literal secrets into hub.toml as they are, instead of ${VAR} references")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was imported as one JSON object")
	return cmd
}

// importHub is the hub that import must not import into itself, and the
// variables its registry refers to already, which a replaced secret must
// not take for another value. The hub listens on the registry's listen
// address (or, when there is no registry yet, the one status would ask)
// and on the one a running hub recorded in the data directory, which
// serve --listen may have changed; the default registry's address when
// neither is known. Its registry is --config. The hubclient.Target is where that
// hub answers, nil when the registry does not load (finding it then prints
// the registry's problems, which only matters when it is asked).
func (a *app) importHub() (registry.Self, []string, *hubclient.Target) {
	reg, err := a.loadExistingRegistry()
	self, at := a.locator().ForImport(reg, err == nil)
	if reg != nil {
		return self, reg.SecretEnvNames(), at
	}
	return self, nil, at
}

// disableUnset marks disabled, in res.Specs, every enabled server that
// refers to a variable the hub's environment lacks, or to a variable that
// now stands for a literal secret of file which this process does not hold
// with that value; it returns the note for each, by server name. The
// running hub (or this process, when none runs) is asked once for the
// whole import: the one at at, or, when at is nil, the one status would
// ask.
func (a *app) disableUnset(ctx context.Context, at *hubclient.Target, res *clientconf.ImportResult, file string) map[string]string {
	names := res.Vars()
	var unset []string
	var where string
	if len(names) > 0 {
		if at == nil {
			if t, ok := a.envTarget(names); ok {
				at = &t
			}
		}
		if at != nil {
			unset, where = a.unsetVars(ctx, *at, names)
		}
	}
	return res.DisableUnsetNoted(unset, where, file, a.stderr)
}
