package service

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The words mcphub service says: the state for a person, and what install
// tells the user about the service it started. They take what they need
// of hub.toml as plain values (HubConfig), so that this package stays free
// of registry/.

// WriteState prints the service's state for a person, as mcphub service
// status does: its state, the unit file (the launchd agent, the Windows
// registry key) and, when it is not installed, how to install it.
func (h Host) WriteState(w io.Writer, st State) {
	state := st.State
	if state == "restarting" {
		state += " (failing): see mcphub logs"
	}
	fmt.Fprintf(w, "mcphub service: %s\n", state)
	what := "unit file"
	switch h.GOOS {
	case "darwin":
		what = "launchd agent"
	case "windows":
		what = "registry key"
	}
	fmt.Fprintf(w, "%s: %s\n", what, st.UnitFile)
	if !st.Installed {
		fmt.Fprintln(w, "install it with: mcphub service install")
	}
}

// CheckExecutable is the mcphub binary for the service to run, as the
// caller found it: exe, whether go run or go test built it, or err, why it
// was not found. A binary built in a temporary directory is refused, with
// the fix, as it is gone once it exits.
func CheckExecutable(exe string, goRun bool, err error) (string, error) {
	if err != nil {
		return "", fmt.Errorf("cannot find the mcphub binary for the service: %w", err)
	}
	if goRun {
		return "", fmt.Errorf("this mcphub was built by go run or go test in a temporary directory (%s), which is gone once it exits, so a service cannot run it: install it with go install ./cmd/mcphub, then run mcphub service install with the installed binary", exe)
	}
	return exe, nil
}

// NextStart is when the service manager starts the service by itself
// again after a stop: at boot on Windows, at login elsewhere.
func (h Host) NextStart() string {
	if h.GOOS == "windows" {
		return "boot"
	}
	return "login"
}

// HubConfig is what install's notes need of the registry the service
// serves, as the caller read it from hub.toml.
type HubConfig struct {
	// TokenAuth is set when [hub] auth = "token".
	TokenAuth bool
	// TokenFile and TokenEnv are [hub] token_file and token_env: where
	// the hub finds its token.
	TokenFile, TokenEnv string
	// Servers are the enabled servers, each with the variables its entry
	// refers to with ${NAME}.
	Servers []ServerVars
}

// ServerVars is an enabled server and the variables it refers to.
type ServerVars struct {
	Name string
	Vars []string
}

// InstallText is what install says once the service started: where it
// is and what it runs, the variables it does not get from this shell (the
// proxies held back, the servers' ${NAME}s, the token), a hub that holds
// the data directory already, when the service starts, and where to look
// next. It names variables, never their values.
func (h Host) InstallText(p *Plan, done Installed, hub HubConfig) []string {
	st := done.State
	lines := []string{
		fmt.Sprintf("installed the mcphub service (%s), %s", st.UnitFile, st.State),
		fmt.Sprintf("it runs: %s", strings.Join(p.Command, " ")),
	}
	for _, name := range p.Held {
		lines = append(lines, fmt.Sprintf("note: %s holds credentials, so it is not written into the unit; %s", name, h.SetInManager(st.UnitFile, name)))
	}
	if hub.TokenAuth {
		if n := h.tokenNote(hub, st); n != "" {
			lines = append(lines, n)
		}
	}
	lines = append(lines, h.varNotes(hub, p, st)...)
	if done.Holder != 0 {
		lines = append(lines, fmt.Sprintf("note: a hub (pid %d) already serves %s; the service takes over once it stops", done.Holder, p.DataDir))
	}
	switch h.GOOS {
	case "linux":
		lines = append(lines, "it starts when you log in; to keep it running after you log out and start it at boot: loginctl enable-linger $USER",
			fmt.Sprintf("systemd's view: systemctl --user status %s; journalctl --user -u %s -f", Name, Name))
	case "darwin":
		lines = append(lines, fmt.Sprintf("it starts when you log in; what it prints before its log opens goes to %s", filepath.Join(p.DataDir, Name+".err.log")))
	case "windows":
		lines = append(lines, fmt.Sprintf("it starts at boot and runs as %s; it reads %s and keeps its data in %s", p.Account, p.ConfigPath, p.DataDir))
	}
	return append(lines, "logs:   mcphub logs -f", "status: mcphub service status")
}

// varNotes names, for each enabled server, the variables its entry refers
// to that this shell sets and the service will not have: names only,
// never values. Under the service the server goes without them.
func (h Host) varNotes(hub HubConfig, p *Plan, st State) []string {
	var lines, all []string
	for _, srv := range hub.Servers {
		missing := p.ShellOnly(srv.Vars)
		if len(missing) == 0 {
			continue
		}
		them := "it"
		if len(missing) > 1 {
			them = "them"
		}
		lines = append(lines, fmt.Sprintf("note: server %s uses %s from this shell, which the service does not get: under the service it goes without %s", srv.Name, "${"+strings.Join(missing, "}, ${")+"}", them))
		for _, name := range missing {
			if !slices.Contains(all, name) {
				all = append(all, name)
			}
		}
	}
	if len(all) > 0 {
		lines = append(lines, "note: [hub] env_passthrough does not help, since the service's own environment lacks them; "+h.SetInManager(st.UnitFile, all...))
	}
	return lines
}

// tokenNote says where the service finds the token when auth is on: never
// in the unit, so from token_file, unless the user sets the variable in
// the service manager; "" when token_file holds the token this shell has.
func (h Host) tokenNote(hub HubConfig, st State) string {
	file, env := hub.TokenFile, hub.TokenEnv
	data, err := os.ReadFile(file)
	hasFile := err == nil && strings.TrimSpace(string(data)) != ""
	shell := ""
	if env != "" {
		shell = strings.TrimSpace(os.Getenv(env))
	}
	switch {
	case hasFile && shell != "" && shell != strings.TrimSpace(string(data)):
		return fmt.Sprintf("note: auth is on; the service does not get %s from this shell (no token is written into the unit) and reads the token in %s, another one: clients must use that one", env, file)
	case hasFile:
		return ""
	case shell != "":
		return fmt.Sprintf("note: auth is on and the token is in %s, which is not written into the unit, so the service has no token and will not start: put that token in %s (mode 0600; or create a new one there with mcphub token), or %s", env, file, h.SetInManager(st.UnitFile, env))
	}
	return fmt.Sprintf("note: auth is on but %s holds no token, so the service will not start: create one with mcphub token", file)
}
