package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/internal/jsonrpc"
)

// version is mcphub's release version, set at build time with
// -ldflags "-X main.version=v1.2.3". Without it the module version from the
// build info is used, or "dev" for a build from a work tree.
var version = ""

func mcphubVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print mcphub's version and the MCP protocol versions it speaks",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(a.stdout, "mcphub %s (%s, %s/%s)\n", mcphubVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			fmt.Fprintf(a.stdout, "MCP protocol versions: %s\n", strings.Join(jsonrpc.SessionVersions, ", "))
			return nil
		},
	}
}
