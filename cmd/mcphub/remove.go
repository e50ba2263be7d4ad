package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/registry"
)

func newRemoveCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove an MCP server from the registry",
		Long: `Remove an MCP server from the registry, with its subtables and the comment
block directly above it. Everything else in the file stays as it was. A
running hub stops the server and ends its sessions on its own.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := registry.RemoveServer(a.configPath, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "removed server %q from %s\n", args[0], a.configPath)
			return nil
		},
	}
}
