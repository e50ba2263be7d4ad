package service

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	kservice "github.com/kardianos/service"
)

// Request is what mcphub service install asks for: the caller's inputs,
// which this package takes rather than finding them itself, so that it
// needs nothing of the CLI or of hub.toml.
type Request struct {
	// Executable returns the absolute path of the mcphub binary the
	// service is to run, or an error that says why there is none (a go
	// run build). PlanInstall calls it only once the service manager is
	// known to be usable.
	Executable func() (string, error)
	// ConfigPath and DataDir are the --config and --data-dir the service
	// runs with; relative ones are made absolute.
	ConfigPath, DataDir string
	// Credential returns the credential a proxy variable's value holds,
	// "" for none (client.URLCredential): such a value stays out of the
	// unit.
	Credential func(value string) string
	// Force replaces an installed service.
	Force bool
	// PasswordStdin reads the Windows password from the first line of
	// Terminal.Stdin instead of asking for it.
	PasswordStdin bool
	// Terminal is where a Windows install asks for the account's password.
	Terminal Terminal
	// Holder returns the pid of a live hub that serves DataDir already,
	// 0 for none; Install asks just before it starts the service.
	Holder func() int
}

// Terminal is where install asks for the password Windows needs to run the
// service as the user.
type Terminal struct {
	Stdin        io.Reader              // what --password-stdin reads
	IsTerminal   func() bool            // whether stdin is a terminal to ask on
	ReadPassword func() ([]byte, error) // one line from the terminal, not echoed
	Prompt       io.Writer              // where the question goes (stderr)
}

// Plan is what install writes, and what it tells the user about.
type Plan struct {
	// Config is what the service manager is given.
	Config *kservice.Config
	// Command is the command the service runs, unescaped.
	Command []string
	// ConfigPath and DataDir are the absolute --config and --data-dir.
	ConfigPath, DataDir string
	// Held names the proxy variables of this shell held back from the
	// unit because their values hold credentials.
	Held []string
	// Account is, on Windows, the account the service logs on as.
	Account string

	goos    string
	environ []string
	req     Request
}

// PlanInstall checks that the service manager can be used and builds the
// kservice.Config that Install gives it: mcphub serve with the request's
// --config and --data-dir, the shell's PATH, proxy and CA variables, a
// restart policy, and on Windows the user's account.
func (h Host) PlanInstall(r Request) (*Plan, error) {
	if err := h.Ready(); err != nil {
		return nil, err
	}
	if r.PasswordStdin && h.GOOS != "windows" {
		return nil, errors.New("--password-stdin: only a Windows service needs your password; here the service runs as you without one, so leave the flag out")
	}
	exe, err := r.Executable()
	if err != nil {
		return nil, err
	}
	cfgPath, err := filepath.Abs(r.ConfigPath)
	if err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(r.DataDir)
	if err != nil {
		return nil, err
	}
	environ := h.Environ()
	env, held := unitEnv(h.GOOS, environ, r.Credential)
	args := []string{"serve", "--config", cfgPath, "--data-dir", dataDir}
	command := append([]string{exe}, args...)
	cfg := &kservice.Config{
		Name:        Name,
		DisplayName: "mcphub",
		Description: "mcphub: one MCP endpoint over every server in the registry",
		Executable:  exe,
		Arguments:   args,
		EnvVars:     env,
		Option:      kservice.KeyValue{"UserService": true},
	}
	switch h.GOOS {
	case "linux":
		// Written into ExecStart=, these go through systemd's unquoting,
		// % specifiers and $ variables.
		cfg.Executable = systemdExecWord.Replace(exe)
		for i, arg := range args {
			args[i] = systemdExecQuoted.Replace(arg)
		}
		cfg.Option["Restart"] = "on-failure"
		cfg.Option["SystemdScript"] = systemdUserUnit
	case "darwin":
		// A user unit of systemd starts in the home directory; a launchd
		// agent in /.
		if home, err := h.HomeDir(); err == nil {
			cfg.WorkingDirectory = home
		}
		cfg.Option["KeepAlive"] = true
		cfg.Option["RunAtLoad"] = true
		// launchd's stdout and stderr files: what the hub says before its
		// own log file is open.
		cfg.Option["LogDirectory"] = dataDir
	case "windows":
		cfg.Option["OnFailure"] = "restart"
		cfg.Option["OnFailureDelayDuration"] = "5s"
		cfg.Option["OnFailureResetPeriod"] = 600
		// Not LocalSystem: the service runs the user's servers, from a
		// registry the user can edit, so it runs as the user. Install adds
		// the password.
		account, err := h.Account()
		if err != nil || account == "" {
			return nil, fmt.Errorf("cannot tell which account the service is to run as: %w", errors.Join(err, errors.New("no account name")))
		}
		cfg.UserName = account
	}
	return &Plan{Config: cfg, Command: command, ConfigPath: cfgPath, DataDir: dataDir, Held: held, Account: cfg.UserName,
		goos: h.GOOS, environ: environ, req: r}, nil
}

// systemdUserUnit is the unit of the systemd user service, in
// kardianos/service's template syntax. Unlike its built-in one it is wanted
// by default.target, which a user instance reaches at login
// (multi-user.target exists only in the system instance), and restarts
// after 5 s rather than 2 min, giving up (failed) after 5 starts within a
// minute. It starts in the home directory, as user units do.
const systemdUserUnit = `[Unit]
Description={{Description}}
StartLimitIntervalSec=60
StartLimitBurst=5

[Service]
ExecStart={{Path | cmdEscape}}{{range Arguments}} {{. | cmd}}{{end}}
Restart={{Restart}}
RestartSec=5
{{range EnvVars}}{{.}}
{{end}}
[Install]
WantedBy=default.target
`

// systemdWord escapes a bare word of a unit file (an Environment= value,
// the program of ExecStart=), which systemd splits at white space, unquotes,
// C-unescapes and then expands % specifiers in.
var systemdWord = strings.NewReplacer(`\`, `\\`, `%`, `%%`, `"`, `\"`, `'`, `\'`,
	" ", `\x20`, "\t", `\t`, "\n", `\n`, "\r", `\r`)

// systemdExecWord escapes the program of ExecStart=, where systemd also
// expands $NAME and ${NAME}; $$ is a $.
var systemdExecWord = strings.NewReplacer(`\`, `\\`, `%`, `%%`, `$`, `$$`, `"`, `\"`, `'`, `\'`,
	" ", `\x20`, "\t", `\t`, "\n", `\n`, "\r", `\r`)

// systemdExecQuoted escapes an argument of ExecStart=, which
// kardianos/service puts in double quotes (escaping " itself): the
// backslash, %, $ and line ends.
var systemdExecQuoted = strings.NewReplacer(`\`, `\\`, `%`, `%%`, `$`, `$$`, "\n", `\n`, "\r", `\r`)

// unitEnvNames are the variables of the installing shell that the service
// gets: where to find programs (npx, uvx), the proxy and the CA
// certificates a corporate network adds. All are in the safe set the hub
// passes to its stdio servers (client/env.go); the rest of that set (HOME,
// USER, TMPDIR, ...) the service manager sets itself, and session-bound
// ones (XDG_RUNTIME_DIR, XDG_SESSION_ID) must not be frozen into a unit.
var unitEnvNames = []string{"PATH",
	"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE"}

// proxyNames are the proxy variables, which tools read in either case
// (curl only in lower case).
var proxyNames = []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"}

// managerEnvNames are the variables the service manager gives a service
// itself, which the service therefore has without the unit setting them.
var managerEnvNames = map[string][]string{
	"linux":   {"HOME", "USER", "LOGNAME", "SHELL", "XDG_RUNTIME_DIR", "LANG"},
	"darwin":  {"HOME", "USER", "LOGNAME", "SHELL", "TMPDIR"},
	"windows": {"USERPROFILE", "USERNAME", "USERDOMAIN", "APPDATA", "LOCALAPPDATA", "TEMP", "TMP", "HOMEDRIVE", "HOMEPATH", "SYSTEMROOT", "WINDIR", "SYSTEMDRIVE", "PROGRAMFILES", "PROGRAMFILES(X86)", "PROGRAMDATA", "COMPUTERNAME", "COMSPEC", "PATHEXT", "OS"},
}

// unitEnv picks from environ (os.Environ) the variables the service gets,
// escaped for the unit on Linux. A proxy URL that holds credentials (as
// credential tells) is a secret and is held back: held names it.
func unitEnv(goos string, environ []string, credential func(string) string) (env map[string]string, held []string) {
	env = map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || value == "" {
			continue
		}
		proxy := slices.Contains(proxyNames, strings.ToUpper(name))
		known := slices.Contains(unitEnvNames, name) ||
			(goos == "windows" && slices.Contains(unitEnvNames, strings.ToUpper(name)))
		if !proxy && !known {
			continue
		}
		if proxy && credential(value) != "" {
			held = append(held, name)
			continue
		}
		if goos == "linux" {
			value = systemdWord.Replace(value)
		}
		env[name] = value
	}
	slices.Sort(held)
	return env, held
}

// ShellOnly returns those of names that the installing shell sets and the
// service will not have (neither the unit nor the service manager gives
// them), in order: a server's ${NAME} that works from the shell goes
// without them under the service. Names compare without case on Windows.
func (p *Plan) ShellOnly(names []string) []string {
	key := func(name string) string {
		if p.goos == "windows" {
			return strings.ToUpper(name)
		}
		return name
	}
	shell := map[string]bool{}
	for _, kv := range p.environ {
		if name, _, ok := strings.Cut(kv, "="); ok && name != "" {
			shell[key(name)] = true
		}
	}
	has := map[string]bool{}
	for name := range p.Config.EnvVars {
		has[key(name)] = true
	}
	for _, name := range managerEnvNames[p.goos] {
		has[key(name)] = true
	}
	var missing []string
	for _, name := range names {
		if shell[key(name)] && !has[key(name)] {
			missing = append(missing, name)
		}
	}
	return missing
}

// SetInManager tells how to give the service variables by hand, in the
// service manager, for the user who accepts their values there: the unit
// mcphub writes never holds a secret. unit is State.UnitFile.
func (h Host) SetInManager(unit string, names ...string) string {
	it := "it"
	if len(names) > 1 {
		it = "them"
	}
	each := func(format string) string {
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = fmt.Sprintf(format, n)
		}
		return strings.Join(parts, " ")
	}
	switch h.GOOS {
	case "linux":
		dropIn := filepath.Join(filepath.Dir(unit), Name+".service.d", "override.conf")
		return fmt.Sprintf("to give %s to the service, run systemctl --user edit %s and add under [Service] %s (kept in %s), then mcphub service stop and mcphub service start", it, Name, each("Environment=%s=..."), dropIn)
	case "darwin":
		return fmt.Sprintf("to give %s to the service, add %s under EnvironmentVariables in %s, then mcphub service stop and mcphub service start (install --force rewrites that file)", it, strings.Join(names, ", "), unit)
	default:
		return fmt.Sprintf("to give %s to the service, add %s to the Environment value of %s, then mcphub service stop and mcphub service start", it, each("%s=..."), unit)
	}
}
