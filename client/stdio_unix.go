//go:build unix

package client

import (
	"os"
	"os/exec"
	"syscall"
)

// safeEnv is the safe set of a stdio server's environment on Unix besides
// the proxy variables (proxyEnv): path.Match globs of the variables of
// mcphub's own environment every server gets (see env.go). They let a
// program find its tools, home, user, shell, locale, time zone, temporary
// and XDG directories, and trust the CA certificates a corporate network
// adds. None of them holds a secret.
var safeEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL",
	"LANG", "LC_*", "TZ",
	"TMPDIR", "TEMP", "TMP", "XDG_*",
	"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
}

// envFoldCase is false: Unix variable names are case-sensitive.
const envFoldCase = false

// resolveCommand leaves the command to exec.Command, whose lookup is the one
// every Unix tool makes.
func resolveCommand(name string, _ []string) (string, error) {
	return name, nil
}

// procGroup is the process group a stdio server leads. The group, not the
// process, is what shutdown signals, so that whatever the server spawned
// (npx starts node, uvx starts python) stops with it.
type procGroup struct {
	pgid int
}

func newProcGroup() (*procGroup, error) { return &procGroup{}, nil }

// prepare makes the child the leader of a new process group.
func (g *procGroup) prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// attach records the group the started child leads: its id is the child's
// PID. The child is in it from its first instruction, so there is no window
// in which what it spawns escapes the group.
func (g *procGroup) attach(p *os.Process) error {
	g.pgid = p.Pid
	return nil
}

// stopSteps is SIGTERM to the group after stdinGrace, then SIGKILL after
// termGrace.
func (g *procGroup) stopSteps() []stopStep {
	return []stopStep{
		{grace: stdinGrace, what: "SIGTERM", act: func() { g.signal(syscall.SIGTERM) }},
		{grace: termGrace, what: "SIGKILL", act: g.kill},
	}
}

// kill stops whatever is left in the group at once.
func (g *procGroup) kill() { g.signal(syscall.SIGKILL) }

func (g *procGroup) signal(sig syscall.Signal) {
	if g.pgid > 1 {
		syscall.Kill(-g.pgid, sig)
	}
}

// release has nothing to free on Unix: a process group is not a handle.
func (g *procGroup) release() {}
