package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kardianos/service"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/registry"
)

func init() { commands = append(commands, newServiceCmd) }

// serviceName names the unit, the launchd agent and the Windows service.
const serviceName = "mcphub"

const serviceLong = `Run the hub in the background, started by the OS's service manager at login
(or boot) and restarted when it fails:

  Linux    a systemd user unit, ~/.config/systemd/user/mcphub.service (no root)
  macOS    a launchd agent, ~/Library/LaunchAgents/mcphub.plist
  Windows  a service named mcphub (install and uninstall need an elevated shell)

Each runs as you, never as root or LocalSystem: your servers run with your
rights and your home directory. On Windows that means the service logs on
with your account (DOMAIN\user), so install asks for your Windows password,
without showing it, and hands it to Windows, which keeps it for the
service; mcphub neither prints nor stores it. Without a terminal, pipe it
in with --password-stdin. The account needs the right to log on as a
service (secpol.msc, Local Policies, User Rights Assignment).

The service runs "mcphub serve" from this mcphub's absolute path (the path
you ran it by, such as a package manager's symlink, which outlives an
upgrade), with this shell's --config and --data-dir spelled out, so it
serves the same registry and keeps the same sessions and logs as a hub you
start yourself. It gets this shell's PATH, proxy and CA certificate
variables (HTTPS_PROXY, NODE_EXTRA_CA_CERTS, ...), as they are at install
time, and no other: no token or other secret is written into the unit. A
proxy URL with credentials in it (user:password@ or token@) is held back
too. Install names the variables your servers' ${VAR}s need that this shell
has and the service will not, and how to give them to it.

  mcphub service install     write the unit and start it (--force replaces one)
  mcphub service status      installed, running or stopped, and the unit file
  mcphub service stop|start  stop or start it
  mcphub service uninstall   stop it and remove the unit

See what it does with mcphub logs -f.`

const serviceInstallLong = `Install the service and start it: a systemd user unit on Linux, a launchd
agent on macOS, a Windows service. It runs "mcphub serve" with this shell's
--config and --data-dir, as you.

On Windows the service logs on with your account (DOMAIN\user, as
whoami prints it), never as LocalSystem, so your servers run with your
rights. Windows needs your account's password for that: install asks for
it on the terminal, without showing it, or reads the first line of stdin
with --password-stdin. mcphub hands it to Windows, which keeps it for the
service; mcphub never prints, logs or stores it. Run install from an
elevated shell (Run as administrator). If the service then does not start
with a logon failure, the password was wrong, or the account lacks the
right to log on as a service: grant it in secpol.msc (Local Policies, User
Rights Assignment, Log on as a service). After you change your password,
run mcphub service install --force.

  mcphub service install                      asks for the password on Windows
  <secret tool> | mcphub service install --password-stdin
                                             Windows, without a terminal`

// serviceManager is what mcphub service asks of the OS's service manager.
// kardianos/service implements it; tests give a fake.
type serviceManager interface {
	Install() error
	Uninstall() error
	Start() error
	Stop() error
	Status() (service.Status, error)
}

// serviceHost is this machine as mcphub service sees it: its OS, its
// service manager and where the running mcphub is. Tests replace it.
type serviceHost struct {
	goos       string                                            // runtime.GOOS
	platform   string                                            // service.Platform(): linux-systemd, darwin-launchd, windows-service, ...
	executable func() (string, error)                            // os.Executable
	args0      string                                            // os.Args[0]: the name mcphub was run by
	lookPath   func(string) (string, error)                      // exec.LookPath
	environ    func() []string                                   // os.Environ
	homeDir    func() (string, error)                            // the home directory the service manager uses
	account    func() (string, error)                            // the current user's account name (DOMAIN\user on Windows)
	probe      func() error                                      // nil when the user's service manager answers
	unitState  func() (active, sub string, err error)            // systemd's ActiveState and SubState of the unit (Linux)
	open       func(cfg *service.Config) (serviceManager, error) // the service of cfg

	stdin        io.Reader              // what --password-stdin reads
	isTerminal   func() bool            // whether stdin is a terminal to ask for the password on
	readPassword func() ([]byte, error) // one line from the terminal, not echoed
}

// newServiceHost returns the real host; tests replace it.
var newServiceHost = func() serviceHost {
	return serviceHost{
		goos:       runtime.GOOS,
		platform:   service.Platform(),
		executable: os.Executable,
		args0:      os.Args[0],
		lookPath:   exec.LookPath,
		environ:    os.Environ,
		homeDir:    serviceHomeDir,
		account: func() (string, error) {
			u, err := user.Current()
			if err != nil {
				return "", err
			}
			return u.Username, nil
		},
		probe:     probeServiceManager,
		unitState: systemdUnitState,
		open: func(cfg *service.Config) (serviceManager, error) {
			return service.New(noProgram{}, cfg)
		},
		stdin:        os.Stdin,
		isTerminal:   func() bool { return term.IsTerminal(int(os.Stdin.Fd())) },
		readPassword: func() ([]byte, error) { return term.ReadPassword(int(os.Stdin.Fd())) },
	}
}

// noProgram is the service.Interface of the commands that only control the
// service: they never run it.
type noProgram struct{}

func (noProgram) Start(service.Service) error { return nil }
func (noProgram) Stop(service.Service) error  { return nil }

// serviceHomeDir is the home directory kardianos/service puts a user unit
// under: $HOME on Linux, the account's on macOS.
func serviceHomeDir() (string, error) {
	if runtime.GOOS == "darwin" {
		if u, err := user.Current(); err == nil && u.HomeDir != "" {
			return u.HomeDir, nil
		}
	}
	return os.UserHomeDir()
}

// errNoUserManager means the user's service manager cannot be reached from
// here: on Linux, no systemd user instance answers on a session bus.
var errNoUserManager = errors.New("the user's service manager does not answer")

// probeServiceManager checks, on Linux, that systemctl --user reaches a
// systemd user instance: without a session bus (su, ssh without a login
// session, containers) every systemctl --user command fails, and
// kardianos/service would write the unit and then fail to enable it.
func probeServiceManager() error {
	if runtime.GOOS != "linux" {
		return nil
	}
	cmd := exec.Command("systemctl", "--user", "show", "--property=Version")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exitErr):
		line, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		return fmt.Errorf("%w: systemctl --user: %s", errNoUserManager, line)
	default:
		return fmt.Errorf("systemctl --user: %w", err)
	}
}

// systemdUnitState asks systemd for the unit's ActiveState and SubState:
// kardianos/service reports a unit that fails and waits to be restarted
// (activating, auto-restart) as running.
func systemdUnitState() (active, sub string, err error) {
	out, err := exec.Command("systemctl", "--user", "show", "-p", "ActiveState,SubState", serviceName+".service").Output()
	if err != nil {
		return "", "", fmt.Errorf("systemctl --user show: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "ActiveState":
			active = v
		case "SubState":
			sub = v
		}
	}
	return active, sub, nil
}

// serviceOptions are the flags of mcphub service and its subcommands.
type serviceOptions struct {
	asJSON        bool
	force         bool
	passwordStdin bool
}

func newServiceCmd(a *app) *cobra.Command {
	var o serviceOptions
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Run the hub as a background service (systemd user unit, launchd agent, Windows service)",
		Long:  serviceLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().BoolVar(&o.asJSON, "json", false, "print the service's state as JSON")
	sub := func(use, short string, do func(*serviceCtl) error) *cobra.Command {
		return &cobra.Command{
			Use:   use,
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				return do(&serviceCtl{a: a, h: newServiceHost(), o: o})
			},
		}
	}
	install := sub("install", "Install the service and start it", (*serviceCtl).install)
	install.Long = serviceInstallLong
	install.Flags().BoolVar(&o.force, "force", false, "replace the service when it is installed already")
	install.Flags().BoolVar(&o.passwordStdin, "password-stdin", false, "Windows: read your account's password from the first line of stdin instead of asking for it")
	cmd.AddCommand(install,
		sub("uninstall", "Stop the service and remove it", (*serviceCtl).uninstall),
		sub("status", "Show whether the service is installed and running, and its unit file", (*serviceCtl).status),
		sub("start", "Start the installed service", (*serviceCtl).start),
		sub("stop", "Stop the service (it starts again at the next login or boot)", (*serviceCtl).stop))
	return cmd
}

// serviceCtl carries one mcphub service command.
type serviceCtl struct {
	a *app
	h serviceHost
	o serviceOptions
}

// serviceState is what mcphub service status reports.
type serviceState struct {
	Installed bool `json:"installed"`
	// State is running, restarting (Linux: it failed and systemd starts
	// it again), stopped, failed (Linux: systemd gave up), not installed
	// or unavailable.
	State    string `json:"state"`
	Platform string `json:"platform"`
	// UnitFile is the systemd unit or launchd plist; on Windows, the
	// service's registry key.
	UnitFile string `json:"unit_file"`
	// Error says why the service manager cannot be used here, with the
	// fix; State is then "unavailable".
	Error string `json:"error,omitempty"`
}

// active reports whether the service manager runs the service, or is about
// to run it again.
func (st serviceState) active() bool { return st.State == "running" || st.State == "restarting" }

// ready checks that this OS has a service manager mcphub can use.
func (c *serviceCtl) ready() error {
	switch c.h.goos {
	case "linux":
		if c.h.platform != "linux-systemd" {
			return fmt.Errorf("%w (systemd is not this system's service manager): run mcphub serve from your shell, or start it from your init system", errNoSystemdUser)
		}
		if err := c.h.probe(); err != nil {
			return explainServiceError(c.h.goos, "reach", err)
		}
	case "darwin", "windows":
	default:
		return fmt.Errorf("mcphub service supports Linux (systemd), macOS (launchd) and Windows, not %s: run mcphub serve from your init system", c.h.goos)
	}
	return nil
}

// errNoSystemdUser starts the sentence that says systemd user services
// cannot be used here.
var errNoSystemdUser = errors.New("systemd user services are not available here")

// errServiceLogonFailed is Windows's ERROR_SERVICE_LOGON_FAILED: the
// service manager could not log on as the service's account.
const errServiceLogonFailed = syscall.Errno(1069)

// explainServiceError turns what the service manager said into a sentence
// with the fix, for the action (install, start, ...) that failed.
func explainServiceError(goos, action string, err error) error {
	switch {
	case errors.Is(err, errNoUserManager):
		return fmt.Errorf("%w (no user session bus): run mcphub serve from your shell, or enable lingering with loginctl enable-linger $USER and log in again", errNoSystemdUser)
	case goos == "windows" && (errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "Access is denied")):
		return fmt.Errorf("cannot %s the mcphub service: Windows lets only administrators do that; open a terminal with Run as administrator and run the command again: %w", action, err)
	case goos == "windows" && (errors.Is(err, errServiceLogonFailed) || strings.Contains(err.Error(), "logon failure")):
		return fmt.Errorf("cannot %s the mcphub service: Windows could not log on as your account: either the password was wrong (run mcphub service install --force and type it again), or the account lacks the right to log on as a service (grant it in secpol.msc, Local Policies, User Rights Assignment, Log on as a service, then mcphub service start): %w", action, err)
	case goos == "linux":
		return fmt.Errorf("cannot %s the mcphub service (see systemctl --user status %s.service): %w", action, serviceName, err)
	}
	return fmt.Errorf("cannot %s the mcphub service: %w", action, err)
}

// unitFile is where the service manager keeps the service's definition.
func (c *serviceCtl) unitFile() (string, error) {
	if c.h.goos == "windows" {
		return `HKLM\SYSTEM\CurrentControlSet\Services\` + serviceName, nil
	}
	home, err := c.h.homeDir()
	if err != nil {
		return "", fmt.Errorf("home directory: %w", err)
	}
	if c.h.goos == "darwin" {
		return filepath.Join(home, "Library", "LaunchAgents", serviceName+".plist"), nil
	}
	return filepath.Join(home, ".config", "systemd", "user", serviceName+".service"), nil
}

// controlConfig is the service.Config of the commands that only look at
// or control the installed service.
func controlConfig() *service.Config {
	return &service.Config{Name: serviceName, Option: service.KeyValue{"UserService": true}}
}

// state asks the service manager about the service. A unit file the
// manager does not know (written, never loaded) counts as installed.
func (c *serviceCtl) state(m serviceManager) (serviceState, error) {
	unit, err := c.unitFile()
	if err != nil {
		return serviceState{}, err
	}
	st := serviceState{Platform: c.h.platform, UnitFile: unit}
	s, err := m.Status()
	switch {
	case errors.Is(err, service.ErrNotInstalled):
		st.State = "not installed"
		if c.h.goos != "windows" && fileExists(unit) {
			st.Installed, st.State = true, "stopped"
		}
		return st, nil
	case err != nil && c.h.goos == "linux" && err.Error() == "service in failed state":
		// kardianos/service's word for systemd's failed: stopped after
		// failing (Restart= gave up, or the unit was stopped while failing).
		st.Installed, st.State = true, "failed"
		return st, nil
	case err != nil:
		return st, explainServiceError(c.h.goos, "ask about", err)
	}
	st.Installed = true
	st.State = "stopped"
	if s == service.StatusRunning {
		st.State = "running"
		if c.h.goos == "linux" {
			// kardianos/service's running includes systemd's activating,
			// which a unit that keeps failing spends its time in.
			if active, sub, err := c.h.unitState(); err == nil && active == "activating" && strings.HasPrefix(sub, "auto-restart") {
				st.State = "restarting"
			}
		}
	}
	return st, nil
}

// control opens the installed service and reads its state.
func (c *serviceCtl) control() (serviceManager, serviceState, error) {
	if err := c.ready(); err != nil {
		return nil, serviceState{}, err
	}
	m, err := c.h.open(controlConfig())
	if err != nil {
		return nil, serviceState{}, fmt.Errorf("service manager: %w", err)
	}
	st, err := c.state(m)
	return m, st, err
}

// report prints the state: a JSON object with --json, else lines.
func (c *serviceCtl) report(st serviceState) error {
	if c.o.asJSON {
		return c.a.printJSON(st)
	}
	state := st.State
	if state == "restarting" {
		state += " (failing): see mcphub logs"
	}
	fmt.Fprintf(c.a.stdout, "mcphub service: %s\n", state)
	what := "unit file"
	switch c.h.goos {
	case "darwin":
		what = "launchd agent"
	case "windows":
		what = "registry key"
	}
	fmt.Fprintf(c.a.stdout, "%s: %s\n", what, st.UnitFile)
	if !st.Installed {
		fmt.Fprintln(c.a.stdout, "install it with: mcphub service install")
	}
	return nil
}

// say prints a line for the user: to stdout, or to stderr when stdout
// carries JSON.
func (c *serviceCtl) say(format string, args ...any) {
	w := c.a.stdout
	if c.o.asJSON {
		w = c.a.stderr
	}
	fmt.Fprintf(w, format+"\n", args...)
}

func (c *serviceCtl) status() error {
	_, st, err := c.control()
	if err != nil && c.o.asJSON {
		// Scripts get an object in every case, and the exit status.
		fmt.Fprintf(c.a.stderr, "mcphub: %v\n", err)
		unit, _ := c.unitFile()
		c.report(serviceState{State: "unavailable", Platform: c.h.platform, UnitFile: unit, Error: err.Error()})
		return exitError{code: 1}
	}
	if err != nil {
		return err
	}
	return c.report(st)
}

func (c *serviceCtl) start() error {
	m, st, err := c.control()
	if err != nil {
		return err
	}
	if !st.Installed {
		return errors.New("the mcphub service is not installed: install it with mcphub service install")
	}
	if st.State != "running" {
		if err := m.Start(); err != nil {
			return explainServiceError(c.h.goos, "start", err)
		}
		if st, err = c.state(m); err != nil {
			return err
		}
	}
	c.say("mcphub service %s; see mcphub service status and mcphub logs -f", st.State)
	return c.reportJSON(st)
}

func (c *serviceCtl) stop() error {
	m, st, err := c.control()
	if err != nil {
		return err
	}
	if !st.Installed {
		return errors.New("the mcphub service is not installed")
	}
	if st.active() {
		if err := m.Stop(); err != nil {
			return explainServiceError(c.h.goos, "stop", err)
		}
		if st, err = c.state(m); err != nil {
			return err
		}
	}
	c.say("mcphub service %s; it starts again at the next %s (mcphub service start starts it now)", st.State, c.nextStart())
	return c.reportJSON(st)
}

// nextStart is when the service manager starts the service by itself.
func (c *serviceCtl) nextStart() string {
	if c.h.goos == "windows" {
		return "boot"
	}
	return "login"
}

// dataDirHolder is the pid of the live hub that holds the data directory,
// 0 when none does (a run file a killed hub left counts for none).
func (c *serviceCtl) dataDirHolder() int {
	if info := hubclient.LiveRunInfo(c.a.dataDir); info != nil {
		return info.PID
	}
	return 0
}

// reportJSON prints the state with --json; the text was said already.
func (c *serviceCtl) reportJSON(st serviceState) error {
	if !c.o.asJSON {
		return nil
	}
	return c.report(st)
}

func (c *serviceCtl) uninstall() error {
	m, st, err := c.control()
	if err != nil {
		return err
	}
	if !st.Installed {
		c.say("the mcphub service is not installed; nothing to remove")
		return c.reportJSON(st)
	}
	if err := c.remove(m, st); err != nil {
		return err
	}
	if st, err = c.state(m); err != nil {
		return err
	}
	c.say("removed the mcphub service (%s)", st.UnitFile)
	return c.reportJSON(st)
}

// remove stops the service and removes it. A unit file the manager never
// loaded is removed by hand.
func (c *serviceCtl) remove(m serviceManager, st serviceState) error {
	if st.active() {
		if err := m.Stop(); err != nil {
			return explainServiceError(c.h.goos, "stop", err)
		}
	}
	err := m.Uninstall()
	if err == nil {
		return nil
	}
	if c.h.goos != "windows" && fileExists(st.UnitFile) {
		if rmErr := os.Remove(st.UnitFile); rmErr != nil {
			return explainServiceError(c.h.goos, "uninstall", errors.Join(err, rmErr))
		}
		return nil
	}
	return explainServiceError(c.h.goos, "uninstall", err)
}

// serviceExecutable is the mcphub binary for the service to run (see
// installedExecutable); one that go run built is refused.
func (c *serviceCtl) serviceExecutable() (string, error) {
	exe, goRun, err := installedExecutable(c.h.executable, c.h.lookPath, c.h.args0)
	if err != nil {
		return "", fmt.Errorf("cannot find the mcphub binary for the service: %w", err)
	}
	if goRun {
		return "", fmt.Errorf("this mcphub was built by go run or go test in a temporary directory (%s), which is gone once it exits, so a service cannot run it: install it with go install ./cmd/mcphub, then run mcphub service install with the installed binary", exe)
	}
	return exe, nil
}

// installPlan is what install writes, and what it tells the user about.
type installPlan struct {
	cfg              *service.Config
	command          []string // the command the service runs, unescaped
	configPath, data string   // absolute --config and --data-dir
	held             []string // proxy variables of this shell held back from the unit
	account          string   // Windows: the account the service logs on as
}

// plan builds the service.Config that install gives the service manager.
func (c *serviceCtl) plan() (installPlan, error) {
	exe, err := c.serviceExecutable()
	if err != nil {
		return installPlan{}, err
	}
	cfgPath, err := filepath.Abs(c.a.configPath)
	if err != nil {
		return installPlan{}, err
	}
	dataDir, err := filepath.Abs(c.a.dataDir)
	if err != nil {
		return installPlan{}, err
	}
	env, held := serviceEnv(c.h.goos, c.h.environ())
	args := []string{"serve", "--config", cfgPath, "--data-dir", dataDir}
	command := append([]string{exe}, args...)
	cfg := &service.Config{
		Name:        serviceName,
		DisplayName: "mcphub",
		Description: "mcphub: one MCP endpoint over every server in the registry",
		Executable:  exe,
		Arguments:   args,
		EnvVars:     env,
		Option:      service.KeyValue{"UserService": true},
	}
	switch c.h.goos {
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
		if home, err := c.h.homeDir(); err == nil {
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
		// registry the user can edit, so it runs as the user. install adds
		// the password.
		account, err := c.h.account()
		if err != nil || account == "" {
			return installPlan{}, fmt.Errorf("cannot tell which account the service is to run as: %w", errors.Join(err, errors.New("no account name")))
		}
		cfg.UserName = account
	}
	return installPlan{cfg: cfg, command: command, configPath: cfgPath, data: dataDir, held: held, account: cfg.UserName}, nil
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

// serviceEnvNames are the variables of the installing shell that the
// service gets: where to find programs (npx, uvx), the proxy and the CA
// certificates a corporate network adds. All are in the safe set the hub
// passes to its stdio servers (client/env.go); the rest of that set (HOME,
// USER, TMPDIR, ...) the service manager sets itself, and session-bound
// ones (XDG_RUNTIME_DIR, XDG_SESSION_ID) must not be frozen into a unit.
var serviceEnvNames = []string{"PATH",
	"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE"}

// serviceProxyNames are the proxy variables, which tools read in either
// case (curl only in lower case).
var serviceProxyNames = []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"}

// serviceEnv picks from environ (os.Environ) the variables the service
// gets, escaped for the unit on Linux. A proxy URL that holds credentials
// is a secret and is held back: held names it.
func serviceEnv(goos string, environ []string) (env map[string]string, held []string) {
	env = map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || value == "" {
			continue
		}
		proxy := slices.Contains(serviceProxyNames, strings.ToUpper(name))
		known := slices.Contains(serviceEnvNames, name) ||
			(goos == "windows" && slices.Contains(serviceEnvNames, strings.ToUpper(name)))
		if !proxy && !known {
			continue
		}
		if proxy && client.URLCredential(value) != "" {
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

func (c *serviceCtl) install() error {
	if err := c.ready(); err != nil {
		return err
	}
	if c.o.passwordStdin && c.h.goos != "windows" {
		return errors.New("--password-stdin: only a Windows service needs your password; here the service runs as you without one, so leave the flag out")
	}
	p, err := c.plan()
	if err != nil {
		return err
	}
	reg, err := c.a.loadRegistry()
	if err != nil {
		return c.a.printRegistryErrors(err)
	}
	m, err := c.h.open(p.cfg)
	if err != nil {
		return fmt.Errorf("service manager: %w", err)
	}
	st, err := c.state(m)
	if err != nil {
		return err
	}
	if st.Installed && !c.o.force {
		return fmt.Errorf("the mcphub service is installed already (%s, %s): reinstall it with mcphub service install --force, or remove it first with mcphub service uninstall", st.UnitFile, st.State)
	}
	if c.h.goos == "windows" {
		// Asked for only now that the install goes ahead. m was opened
		// with p.cfg, whose Option map its Install reads.
		password, err := c.accountPassword(p.account)
		if err != nil {
			return err
		}
		p.cfg.Option["Password"] = password
	}
	if st.Installed {
		if err := c.remove(m, st); err != nil {
			return err
		}
	}
	if c.h.goos == "darwin" {
		// launchd opens its log files there and creates no directory.
		if err := os.MkdirAll(p.data, 0o700); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
	}
	if err := m.Install(); err != nil {
		// A unit written but not enabled would make the next install say
		// it is installed already.
		if c.h.goos != "windows" {
			os.Remove(st.UnitFile)
		}
		return explainServiceError(c.h.goos, "install", err)
	}
	busy := c.dataDirHolder()
	if err := m.Start(); err != nil {
		return fmt.Errorf("the mcphub service is installed (%s) but did not start; see mcphub logs: %w", st.UnitFile, explainServiceError(c.h.goos, "start", err))
	}
	if st, err = c.state(m); err != nil {
		return err
	}
	c.say("installed the mcphub service (%s), %s", st.UnitFile, st.State)
	c.say("it runs: %s", strings.Join(p.command, " "))
	c.installNotes(reg, p, st, busy)
	c.say("logs:   mcphub logs -f")
	c.say("status: mcphub service status")
	return c.reportJSON(st)
}

// accountPassword gets the password of account, which Windows needs to
// run the service as that account: from the first line of stdin with
// --password-stdin, else from the terminal, without echo. It is never
// printed, logged or put in an error.
func (c *serviceCtl) accountPassword(account string) (string, error) {
	var password []byte
	switch {
	case c.o.passwordStdin:
		line, err := bufio.NewReader(io.LimitReader(c.h.stdin, 4096)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("--password-stdin: reading stdin: %w", err)
		}
		password = []byte(strings.TrimRight(line, "\r\n"))
	case !c.h.isTerminal():
		return "", fmt.Errorf("the mcphub service runs as you (%s), and Windows needs your password to start it as you, but stdin is not a terminal to ask for it on: run mcphub service install in a terminal, or pipe the password in with mcphub service install --password-stdin", account)
	default:
		fmt.Fprintf(c.a.stderr, "Windows password of %s, for the service to run as you (not shown): ", account)
		var err error
		password, err = c.h.readPassword()
		fmt.Fprintln(c.a.stderr)
		if err != nil {
			return "", fmt.Errorf("reading the password: %w", err)
		}
	}
	if len(password) == 0 {
		return "", fmt.Errorf("no password given for %s: Windows runs a service only as an account that has a password; type it when asked, or pipe it in with --password-stdin (an account without one needs one set first)", account)
	}
	return string(password), nil
}

// installNotes says what the service does not get from this shell, and
// how it starts.
func (c *serviceCtl) installNotes(reg *registry.Registry, p installPlan, st serviceState, busy int) {
	for _, name := range p.held {
		c.say("note: %s holds credentials, so it is not written into the unit; %s", name, c.setInManager(st.UnitFile, name))
	}
	if reg.Hub.Auth == registry.AuthToken {
		c.tokenNotes(reg, st)
	}
	c.varNotes(reg, p, st)
	if busy != 0 {
		c.say("note: a hub (pid %d) already serves %s; the service takes over once it stops", busy, p.data)
	}
	switch c.h.goos {
	case "linux":
		c.say("it starts when you log in; to keep it running after you log out and start it at boot: loginctl enable-linger $USER")
		c.say("systemd's view: systemctl --user status %s; journalctl --user -u %s -f", serviceName, serviceName)
	case "darwin":
		c.say("it starts when you log in; what it prints before its log opens goes to %s", filepath.Join(p.data, serviceName+".err.log"))
	case "windows":
		c.say("it starts at boot and runs as %s; it reads %s and keeps its data in %s", p.account, p.configPath, p.data)
	}
}

// varNotes names, for each enabled server, the variables its entry refers
// to with ${NAME} that this shell sets and the service will not have:
// names only, never values. Under the service the server goes without
// them.
func (c *serviceCtl) varNotes(reg *registry.Registry, p installPlan, st serviceState) {
	key := func(name string) string {
		if c.h.goos == "windows" {
			return strings.ToUpper(name)
		}
		return name
	}
	shell := map[string]bool{}
	for _, kv := range c.h.environ() {
		if name, _, ok := strings.Cut(kv, "="); ok && name != "" {
			shell[key(name)] = true
		}
	}
	has := map[string]bool{}
	for name := range p.cfg.EnvVars {
		has[key(name)] = true
	}
	for _, name := range managerEnvNames[c.h.goos] {
		has[key(name)] = true
	}
	var all []string
	for _, srv := range reg.Servers {
		if !srv.Enabled {
			continue
		}
		var missing []string
		for _, name := range srv.Vars() {
			if shell[key(name)] && !has[key(name)] {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			continue
		}
		them := "it"
		if len(missing) > 1 {
			them = "them"
		}
		c.say("note: server %s uses %s from this shell, which the service does not get: under the service it goes without %s", srv.Name, "${"+strings.Join(missing, "}, ${")+"}", them)
		for _, name := range missing {
			if !slices.Contains(all, name) {
				all = append(all, name)
			}
		}
	}
	if len(all) > 0 {
		c.say("note: [hub] env_passthrough does not help, since the service's own environment lacks them; %s", c.setInManager(st.UnitFile, all...))
	}
}

// managerEnvNames are the variables the service manager gives a service
// itself, which the service therefore has without the unit setting them.
var managerEnvNames = map[string][]string{
	"linux":   {"HOME", "USER", "LOGNAME", "SHELL", "XDG_RUNTIME_DIR", "LANG"},
	"darwin":  {"HOME", "USER", "LOGNAME", "SHELL", "TMPDIR"},
	"windows": {"USERPROFILE", "USERNAME", "USERDOMAIN", "APPDATA", "LOCALAPPDATA", "TEMP", "TMP", "HOMEDRIVE", "HOMEPATH", "SYSTEMROOT", "WINDIR", "SYSTEMDRIVE", "PROGRAMFILES", "PROGRAMFILES(X86)", "PROGRAMDATA", "COMPUTERNAME", "COMSPEC", "PATHEXT", "OS"},
}

// tokenNotes says where the service finds the token when auth is on: never
// in the unit, so from token_file, unless the user sets the variable in the
// service manager.
func (c *serviceCtl) tokenNotes(reg *registry.Registry, st serviceState) {
	file, env := reg.Hub.TokenFile, reg.Hub.TokenEnv
	data, err := os.ReadFile(file)
	hasFile := err == nil && strings.TrimSpace(string(data)) != ""
	shell := ""
	if env != "" {
		shell = strings.TrimSpace(os.Getenv(env))
	}
	switch {
	case hasFile && shell != "" && shell != strings.TrimSpace(string(data)):
		c.say("note: auth is on; the service does not get %s from this shell (no token is written into the unit) and reads the token in %s, another one: clients must use that one", env, file)
	case hasFile:
	case shell != "":
		c.say("note: auth is on and the token is in %s, which is not written into the unit, so the service has no token and will not start: put that token in %s (mode 0600; or create a new one there with mcphub token), or %s", env, file, c.setInManager(st.UnitFile, env))
	default:
		c.say("note: auth is on but %s holds no token, so the service will not start: create one with mcphub token", file)
	}
}

// setInManager tells how to give the service variables by hand, in the
// service manager, for the user who accepts their values there.
func (c *serviceCtl) setInManager(unit string, names ...string) string {
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
	switch c.h.goos {
	case "linux":
		dropIn := filepath.Join(filepath.Dir(unit), serviceName+".service.d", "override.conf")
		return fmt.Sprintf("to give %s to the service, run systemctl --user edit %s and add under [Service] %s (kept in %s), then mcphub service stop and mcphub service start", it, serviceName, each("Environment=%s=..."), dropIn)
	case "darwin":
		return fmt.Sprintf("to give %s to the service, add %s under EnvironmentVariables in %s, then mcphub service stop and mcphub service start (install --force rewrites that file)", it, strings.Join(names, ", "), unit)
	default:
		return fmt.Sprintf("to give %s to the service, add %s to the Environment value of %s, then mcphub service stop and mcphub service start", it, each("%s=..."), unit)
	}
}

// serviceStopWait bounds how long the Windows service control manager's
// stop request waits for the hub to stop its servers and close its store.
const serviceStopWait = 15 * time.Second

// runServeAsService runs the hub under the Windows service control manager
// when it started this process: the program it starts must answer it, or
// it is killed as unresponsive. It returns handled=false at once on other
// systems, where systemd and launchd stop the hub with SIGTERM, which serve
// handles as from a shell (and wait for it as long as they are set to),
// and when mcphub runs from a shell (or a client); the caller then serves
// as usual. Otherwise run gets a context that is cancelled when the manager
// asks the service to stop, and runServeAsService returns once run has.
func runServeAsService(run func(ctx context.Context) error) (handled bool, err error) {
	return serveAsService(runtime.GOOS, service.Interactive, run)
}

// serveAsService is runServeAsService on goos, interactive telling whether
// a shell rather than a service manager started mcphub.
func serveAsService(goos string, interactive func() bool, run func(ctx context.Context) error) (handled bool, err error) {
	if goos != "windows" || interactive() {
		return false, nil
	}
	open := func(p service.Interface) (serviceRunner, error) {
		return service.New(p, &service.Config{Name: serviceName, Option: service.KeyValue{"UserService": true}})
	}
	return true, serveUnderManager(open, run, serviceStopWait)
}

// underServiceManager reports whether a service manager started mcphub:
// systemd (the unit's parent is systemd), launchd (pid 1) or the Windows
// service control manager.
func underServiceManager() bool { return !service.Interactive() }

// serviceRunner is the part of a kardianos service that runs the program.
type serviceRunner interface {
	Run() error
}

// serveUnderManager runs run as the service.Interface of the service open
// returns. When the manager asks the service to stop, it returns once run
// has returned and so has the manager's Run, which reports the service
// stopped: a process that exits before that is a service that crashed,
// which the manager restarts. When run ends by itself (the hub failed),
// that is the result at once: the process exits, and the manager restarts
// it as on any failure.
func serveUnderManager(open func(service.Interface) (serviceRunner, error), run func(context.Context) error, stopWait time.Duration) error {
	p := newServiceProgram(run, stopWait)
	defer p.cancel()
	s, err := open(p)
	if err != nil {
		return fmt.Errorf("service manager: %w", err)
	}
	ran := make(chan error, 1)
	go func() { ran <- s.Run() }()
	finish := func(err error) error {
		if err != nil {
			return fmt.Errorf("service manager: %w", err)
		}
		if !p.started() {
			return nil
		}
		select {
		case <-p.done:
			return p.err
		default:
			return fmt.Errorf("the hub did not stop within %s of the service manager's stop request", stopWait)
		}
	}
	select {
	case <-p.done:
		if p.ctx.Err() == nil {
			return p.err // the hub ended by itself
		}
		// Stopped on request: the manager's Run has yet to report it.
		return finish(<-ran)
	case err := <-ran:
		return finish(err)
	}
}

// serviceProgram is the service.Interface that runs the hub: Start runs it
// in the background, Stop cancels it and waits for it to end.
type serviceProgram struct {
	run      func(context.Context) error
	ctx      context.Context
	cancel   context.CancelFunc
	stopWait time.Duration
	once     sync.Once
	done     chan struct{} // closed when run has returned
	err      error         // what run returned, once done is closed
	begun    chan struct{} // closed by Start
}

func newServiceProgram(run func(context.Context) error, stopWait time.Duration) *serviceProgram {
	ctx, cancel := context.WithCancel(context.Background())
	return &serviceProgram{run: run, ctx: ctx, cancel: cancel, stopWait: stopWait,
		done: make(chan struct{}), begun: make(chan struct{})}
}

// Start runs the hub in the background: the manager waits for Start to
// return before it reports the service as running.
func (p *serviceProgram) Start(service.Service) error {
	p.once.Do(func() {
		close(p.begun)
		go func() {
			defer close(p.done)
			p.err = p.run(p.ctx)
		}()
	})
	return nil
}

// Stop cancels the hub's context and waits, up to stopWait, for it to stop
// its servers and close its store.
func (p *serviceProgram) Stop(service.Service) error {
	p.cancel()
	if !p.started() {
		return nil
	}
	t := time.NewTimer(p.stopWait)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
	return nil
}

// started reports whether Start has run.
func (p *serviceProgram) started() bool {
	select {
	case <-p.begun:
		return true
	default:
		return false
	}
}
