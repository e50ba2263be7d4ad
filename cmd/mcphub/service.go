package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mcphub/mcphub/client"
	"github.com/mcphub/mcphub/clientconf"
	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/registry"
	"github.com/mcphub/mcphub/service"
)

func init() { commands = append(commands, newServiceCmd) }

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
// serviceHost is this machine as mcphub service sees it: the service
// room's host (its OS, its service manager), where the running mcphub is,
// and the terminal the Windows password is asked on. Tests replace it.
type serviceHost struct {
	service.Host
	executable func() (string, error)       // os.Executable
	args0      string                       // os.Args[0]: the name mcphub was run by
	lookPath   func(string) (string, error) // exec.LookPath

	stdin        io.Reader              // what --password-stdin reads
	isTerminal   func() bool            // whether stdin is a terminal to ask for the password on
	readPassword func() ([]byte, error) // one line from the terminal, not echoed
}

// newServiceHost returns the real host; tests replace it.
var newServiceHost = func() serviceHost {
	return serviceHost{
		Host:         service.NewHost(),
		executable:   os.Executable,
		args0:        os.Args[0],
		lookPath:     exec.LookPath,
		stdin:        os.Stdin,
		isTerminal:   func() bool { return term.IsTerminal(int(os.Stdin.Fd())) },
		readPassword: func() ([]byte, error) { return term.ReadPassword(int(os.Stdin.Fd())) },
	}
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

// report prints the state: a JSON object with --json, else lines.
func (c *serviceCtl) report(st service.State) error {
	if c.o.asJSON {
		return c.a.printJSON(st)
	}
	c.h.WriteState(c.a.stdout, st)
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
	st, err := c.h.Status()
	if err != nil && c.o.asJSON {
		// Scripts get an object in every case, and the exit status.
		fmt.Fprintf(c.a.stderr, "mcphub: %v\n", err)
		c.report(st)
		return exitError{code: 1}
	}
	if err != nil {
		return err
	}
	return c.report(st)
}

func (c *serviceCtl) start() error {
	st, err := c.h.Start()
	if err != nil {
		return err
	}
	c.say("mcphub service %s; see mcphub service status and mcphub logs -f", st.State)
	return c.reportJSON(st)
}

func (c *serviceCtl) stop() error {
	st, err := c.h.Stop()
	if err != nil {
		return err
	}
	c.say("mcphub service %s; it starts again at the next %s (mcphub service start starts it now)", st.State, c.h.NextStart())
	return c.reportJSON(st)
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
func (c *serviceCtl) reportJSON(st service.State) error {
	if !c.o.asJSON {
		return nil
	}
	return c.report(st)
}

func (c *serviceCtl) uninstall() error {
	st, removed, err := c.h.Uninstall()
	if err != nil {
		return err
	}
	if !removed {
		c.say("the mcphub service is not installed; nothing to remove")
		return c.reportJSON(st)
	}
	c.say("removed the mcphub service (%s)", st.UnitFile)
	return c.reportJSON(st)
}

// serviceExecutable is the mcphub binary for the service to run (see
// clientconf.InstalledExecutable); one that go run built is refused.
func (c *serviceCtl) serviceExecutable() (string, error) {
	return service.CheckExecutable(clientconf.InstalledExecutable(c.h.executable, c.h.lookPath, c.h.args0))
}

func (c *serviceCtl) install() error {
	p, err := c.h.PlanInstall(service.Request{
		Executable:    c.serviceExecutable,
		ConfigPath:    c.a.configPath,
		DataDir:       c.a.dataDir,
		Credential:    client.URLCredential,
		Force:         c.o.force,
		PasswordStdin: c.o.passwordStdin,
		Terminal:      service.Terminal{Stdin: c.h.stdin, IsTerminal: c.h.isTerminal, ReadPassword: c.h.readPassword, Prompt: c.a.stderr},
		Holder:        c.dataDirHolder,
	})
	if err != nil {
		return err
	}
	reg, err := c.a.loadRegistry()
	if err != nil {
		return c.a.printRegistryErrors(err)
	}
	done, err := c.h.Install(p)
	if err != nil {
		return err
	}
	hub := service.HubConfig{TokenAuth: reg.Hub.Auth == registry.AuthToken, TokenFile: reg.Hub.TokenFile, TokenEnv: reg.Hub.TokenEnv}
	for _, srv := range reg.Servers {
		if srv.Enabled {
			hub.Servers = append(hub.Servers, service.ServerVars{Name: srv.Name, Vars: srv.Vars()})
		}
	}
	for _, line := range c.h.InstallText(p, done, hub) {
		c.say("%s", line)
	}
	return c.reportJSON(done.State)
}
