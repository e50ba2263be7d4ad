package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/demo"
)

func newDemoCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run a small built-in MCP server over stdio (the default registry's demo server)",
		Long: `Run a small MCP server over stdin/stdout, so that a fresh mcphub has
something real to serve. It offers the tools echo, add and countdown (which
reports progress), the prompt greet and the resource demo://readme.

mcphub starts it itself from the default registry; run it by hand only to
see the protocol:

  mcphub probe -- mcphub demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			demo.Serve(os.Stdin, os.Stdout, mcphubVersion())
			return nil
		},
	}
}
