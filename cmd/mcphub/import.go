package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/registry"
)

func newImportCmd(a *app) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Add the servers of a Claude Desktop, Cursor or VS Code MCP config",
		Long: `Read the MCP server list of another client's JSON config and add those
servers to the registry:

  Claude Desktop  ~/.config/Claude/claude_desktop_config.json  {"mcpServers": {...}}
  Cursor          ~/.cursor/mcp.json                           {"mcpServers": {...}}
  VS Code         .vscode/mcp.json or settings.json            {"servers": {...}} / {"mcp": {"servers": ...}}

Names are made valid for mcphub (a-z, 0-9, '-'); what cannot be mapped is
reported and skipped. Servers whose names exist already are skipped unless
--force replaces them.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			specs, notes, err := registry.ImportClientConfig(data)
			if err != nil {
				return err
			}
			for _, n := range notes {
				fmt.Fprintf(a.stderr, "note: %s\n", n)
			}
			if err := a.ensureRegistry(); err != nil {
				return err
			}
			added, skipped, failed := 0, 0, 0
			for _, s := range specs {
				err := registry.AddServer(a.configPath, s, force)
				switch {
				case err == nil:
					added++
					fmt.Fprintf(a.stdout, "added %s\n", s.Name)
				case errors.Is(err, registry.ErrServerExists):
					skipped++
					fmt.Fprintf(a.stdout, "skipped %s: it exists already (use --force to replace it)\n", s.Name)
				default:
					failed++
					fmt.Fprintf(a.stderr, "could not add %s: %v\n", s.Name, err)
				}
			}
			fmt.Fprintf(a.stdout, "imported %d servers into %s (%d skipped, %d failed)\n", added, a.configPath, skipped, failed)
			if failed > 0 {
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace servers whose names exist already")
	return cmd
}
