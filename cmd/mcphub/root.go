package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/store"
)

// app carries what every command shares: where the registry and the data
// live, and where output goes. Commands read it after flags are parsed.
type app struct {
	configPath string
	dataDir    string
	stdout     io.Writer
	stderr     io.Writer
	oauthState
}

// exitError carries a process exit code through cobra without printing
// anything more; the command already said what went wrong. why is the
// sentence a --json run prints as its error object; it is empty when the
// command printed its own JSON answer, or printed no JSON at all.
type exitError struct {
	code int
	why  string
}

func (e exitError) Error() string {
	if e.why != "" {
		return e.why
	}
	return fmt.Sprintf("exit status %d", e.code)
}

const rootLong = `mcphub is a local hub for Model Context Protocol (MCP) servers.

You list your MCP servers once, in one registry file (hub.toml): local stdio
servers (npx ..., uvx ..., any binary) and remote ones over Streamable HTTP or
the legacy HTTP+SSE transport. mcphub connects to every one of them as an MCP
client and serves all their tools, prompts and resources behind ONE Streamable
HTTP endpoint, with namespaced names (github__create_issue), plus one
pass-through endpoint per server (/{server}/mcp). Point every IDE and agent at
that one URL instead of giving each its own copy of the list.

Sessions and SSE event ids are kept in SQLite under the data directory (or,
for a team's replicas, in PostgreSQL: see mcphub store --help), so a client
whose stream drops, or a hub that restarts, resumes without losing a
notification.

Files (the --config and --data-dir defaults below are this machine's):
  registry   --config, $MCPHUB_CONFIG, default hub.toml in
               Linux    ~/.config/mcphub ($XDG_CONFIG_HOME/mcphub)
               macOS    ~/Library/Application Support/mcphub
               Windows  %AppData%\mcphub
  data       --data-dir, $MCPHUB_DATA, default
               Linux    ~/.local/share/mcphub ($XDG_DATA_HOME/mcphub)
               macOS    ~/Library/Application Support/mcphub
               Windows  %LocalAppData%\mcphub

Scripts: every command that reports a result takes --json, and then prints
JSON on stdout instead of text: one object, unless its help says otherwise.
Notes and warnings stay on stderr. A command that fails with --json still
exits non-zero, and prints {"error": "<what went wrong and the fix>"} on
stdout. No JSON output holds a secret value.

Shell completion, server names included: mcphub completion SHELL, for bash,
zsh, fish or powershell (see mcphub completion --help).`

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "mcphub",
		Short:         "One hub for all your MCP servers, behind one Streamable HTTP endpoint",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		// With no subcommand, mcphub explains itself.
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.PersistentFlags().StringVar(&a.configPath, "config", registry.DefaultPath(),
		"path of the registry file (env MCPHUB_CONFIG)")
	root.PersistentFlags().StringVar(&a.dataDir, "data-dir", defaultDataDir(registry.DefaultDataDir(), registry.LegacyDataDir()),
		"directory for mcphub's state: sessions and events in SQLite (env MCPHUB_DATA)")
	root.AddCommand(newVersionCmd(a), newProbeCmd(a), newAddCmd(a), newListCmd(a), newRemoveCmd(a),
		newValidateCmd(a), newImportCmd(a), newServeCmd(a), newDemoCmd(a), newStatusCmd(a),
		newRestartCmd(a), newEnableCmd(a, true), newEnableCmd(a, false), newSessionsCmd(a),
		newTokenCmd(a), newConnectCmd(a))
	root.AddCommand(newStdioCmd(a))
	for _, c := range commands {
		root.AddCommand(c(a))
	}
	explainUsage(root)
	return root
}

// explainUsage makes cobra's own errors (a wrong number of arguments, an
// unknown flag) sentences that say how the command is used and where its
// help is, for every command under c.
func explainUsage(c *cobra.Command) {
	if inner := c.Args; inner != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := inner(cmd, args); err != nil {
				return fmt.Errorf("%w; usage: %s (see %s --help)", err, cmd.UseLine(), cmd.CommandPath())
			}
			return nil
		}
	}
	c.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())
	})
	for _, sub := range c.Commands() {
		explainUsage(sub)
	}
}

// commands are the commands whose files add them in an init (tools.go,
// logs.go, service.go ...), so that a new command touches only its file.
var commands []func(*app) *cobra.Command

// run executes the command line and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := newRootCmd(a)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	code, why := 1, err.Error()
	var ee exitError
	if errors.As(err, &ee) {
		code, why = ee.code, ee.why
	} else {
		fmt.Fprintf(stderr, "mcphub: %v\n", err)
	}
	if why != "" && jsonMode(cmd) {
		a.printJSON(struct {
			Error string `json:"error"`
		}{why})
	}
	return code
}

// jsonMode reports whether cmd runs with --json.
func jsonMode(cmd *cobra.Command) bool {
	if cmd == nil {
		return false
	}
	f := cmd.Flag("json")
	return f != nil && f.Value.String() == "true"
}

// printJSON prints v on stdout as the one JSON answer of a --json run.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // a sentence may say <token>; scripts are no HTML page
	return enc.Encode(v)
}

// defaultDataDir is the data directory to use when none is given: dir, the
// OS's place, unless an earlier mcphub kept its store at legacy (macOS:
// ~/.local/share/mcphub) and dir holds none yet; that store, its sessions
// and its record of children go on being used until it is moved.
func defaultDataDir(dir, legacy string) string {
	if os.Getenv("MCPHUB_DATA") != "" || legacy == "" {
		return dir
	}
	if !fileExists(filepath.Join(dir, store.FileName)) && fileExists(filepath.Join(legacy, store.FileName)) {
		return legacy
	}
	return dir
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
