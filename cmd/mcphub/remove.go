package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/registry"
)

// removeResult is what remove did, its --json answer.
type removeResult struct {
	Name    string `json:"name"`
	File    string `json:"file"`
	Removed bool   `json:"removed"`
}

func newRemoveCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove an MCP server from the registry",
		Long: `Remove an MCP server from the registry, with its subtables and the comment
block directly above it. Everything else in the file stays as it was. A
running hub stops the server and ends its sessions on its own.

--json prints {"name": "NAME", "file": "/path/to/hub.toml", "removed": true}.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeServers(nil),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := registry.RemoveServer(a.configPath, args[0]); err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(removeResult{Name: args[0], File: a.configPath, Removed: true})
			}
			fmt.Fprintf(a.stdout, "removed server %q from %s\n", args[0], a.configPath)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was removed as one JSON object")
	return cmd
}
