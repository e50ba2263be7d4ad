package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/mcphub/mcphub/registry"
)

// tokenResult is what token did, its --json answer. It never holds the
// token: the file does.
type tokenResult struct {
	TokenFile string `json:"token_file"`
	Auth      string `json:"auth"` // the registry's [hub] auth: "token", or "none" while it is off
}

func newTokenCmd(a *app) *cobra.Command {
	var force, asJSON bool
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create the bearer token clients must send when auth is on",
		Long: `Create a random bearer token in the registry's token_file (default: "token"
beside hub.toml), readable only by you (mode 0600). Turn it on with
  [hub]
  auth = "token"
in hub.toml (or put the token in $MCPHUB_TOKEN instead of a file). Every
request to the hub must then carry "Authorization: Bearer <token>";
mcphub connect CLIENT prints a client configuration that includes it. The
token is never printed here.

--json prints {"token_file": "/path/to/token", "auth": "token"} ("none"
while auth is off), and never the token.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			reg, err := a.loadRegistry()
			if err != nil {
				return a.printRegistryErrors(err)
			}
			path := reg.Hub.TokenFile
			if _, err := os.Stat(path); err == nil && !force {
				return fmt.Errorf("%s exists already; use --force to replace it (clients using the old token stop working)", path)
			}
			buf := make([]byte, 32)
			if _, err := rand.Read(buf); err != nil {
				return err
			}
			tok := base64.RawURLEncoding.EncodeToString(buf)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return err
			}
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
				return err
			}
			if err := os.Rename(tmp, path); err != nil {
				os.Remove(tmp)
				return err
			}
			if asJSON {
				return a.printJSON(tokenResult{TokenFile: path, Auth: reg.Hub.Auth})
			}
			fmt.Fprintf(a.stdout, "created a token in %s (mode 0600)\n", path)
			if reg.Hub.Auth != registry.AuthToken {
				fmt.Fprintf(a.stdout, "auth is off: set auth = \"token\" under [hub] in %s to require it\n", a.configPath)
			}
			fmt.Fprintln(a.stdout, "point a client at the hub with: mcphub connect CLIENT (claude, claude-desktop, codex, cursor, gemini, vscode, windsurf, zed)")
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing token")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print where the token is as one JSON object (never the token)")
	return cmd
}
