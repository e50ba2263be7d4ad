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

// versionResult is the --json answer of version.
type versionResult struct {
	Version          string   `json:"version"`
	Go               string   `json:"go"`
	OS               string   `json:"os"`
	Arch             string   `json:"arch"`
	ProtocolVersions []string `json:"protocol_versions"`
}

func newVersionCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print mcphub's version and the MCP protocol versions it speaks",
		Long: `Print mcphub's version, the Go release and platform it was built for, and
the MCP protocol versions it speaks.

--json prints {"version", "go", "os", "arch", "protocol_versions": [...]}.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			res := versionResult{Version: mcphubVersion(), Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
				ProtocolVersions: jsonrpc.SessionVersions}
			if asJSON {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.stdout, "mcphub %s (%s, %s/%s)\n", res.Version, res.Go, res.OS, res.Arch)
			fmt.Fprintf(a.stdout, "MCP protocol versions: %s\n", strings.Join(res.ProtocolVersions, ", "))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the versions as one JSON object")
	return cmd
}
