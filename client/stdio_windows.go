//go:build windows

package client

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// safeEnv is the safe set of a stdio server's environment on Windows
// besides the proxy variables (proxyEnv): path.Match globs of the variables
// of mcphub's own environment every server gets (see env.go). Besides what
// every OS's safe set holds, Windows programs need more to run at all:
// cmd.exe (which runs .cmd shims such as npx.cmd) and node or python find
// the system directory, the user's profile and application data and the
// program directories through these. None of them holds a secret.
var safeEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL",
	"LANG", "LC_*", "TZ",
	"TMPDIR", "TEMP", "TMP", "XDG_*",
	"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
	"PATHEXT", "SystemRoot", "SystemDrive", "windir", "ComSpec",
	"USERNAME", "USERPROFILE", "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA",
	"ProgramData", "ProgramFiles",
}

// envFoldCase is true: Windows compares variable names without regard to
// case ("Path" is PATH).
const envFoldCase = true

// resolveCommand finds the file to run for name the way Windows does, in the
// PATH the child gets (which the registry may set) with the child's PATHEXT.
// exec.Command alone would search mcphub's own PATH, and a registry that
// gives a server its own PATH would run a different program, or none.
func resolveCommand(name string, env []string) (string, error) {
	path, _ := envValue(env, "PATH")
	pathext, _ := envValue(env, "PATHEXT")
	return lookPathWindows(name, path, pathext, func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular()
	})
}

// envValue finds key in env the way Windows and os/exec do: names compare
// without regard to case ("Path" is PATH), and the last one wins.
func envValue(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		k, v, ok := strings.Cut(env[i], "=")
		if ok && strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

// procGroup is the job object a stdio server runs in. Whatever the server
// spawns joins the job too, and the job is created with
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE: when its last handle closes, every
// process in it is terminated. mcphub holds the only handle, so the server
// and all it spawned die with the hub however the hub ends, even killed from
// the task manager; nothing is left for a later hub to reap.
type procGroup struct {
	job windows.Handle
}

func newProcGroup() (*procGroup, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("create job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("set job object limits: %w", err)
	}
	return &procGroup{job: job}, nil
}

// prepare starts the child without a console window of its own: a hub that
// runs without a console (as a service, or started by an IDE) would
// otherwise open one window per server.
func (g *procGroup) prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NO_WINDOW}
}

// attach puts the started child in the job.
//
// The child is already running when this is called: os/exec offers no way
// to create a process inside a job (PROC_THREAD_ATTRIBUTE_JOB_LIST) or to
// start it suspended and resume it after the assignment. Between
// CreateProcess and AssignProcessToJobObject, a matter of microseconds, a
// process the child spawns is outside the job and would survive the job's
// end. A real server is still loading its runtime by then, so in practice
// nothing escapes, but it is not a guarantee.
func (g *procGroup) attach(p *os.Process) error {
	var err error
	if herr := p.WithHandle(func(h uintptr) {
		err = windows.AssignProcessToJobObject(g.job, windows.Handle(h))
	}); herr != nil {
		return fmt.Errorf("assign the process to its job object: %w", herr)
	}
	if err != nil {
		return fmt.Errorf("assign the process to its job object: %w", err)
	}
	return nil
}

// stopSteps is a single step: after stdinGrace, terminate the job. Windows
// has no SIGTERM to send a console process that has no console.
func (g *procGroup) stopSteps() []stopStep {
	return []stopStep{{grace: stdinGrace, what: "TerminateJobObject", act: g.kill}}
}

// kill terminates every process in the job at once.
func (g *procGroup) kill() {
	windows.TerminateJobObject(g.job, 1)
}

// release closes the job handle. Anything still in the job dies with it.
func (g *procGroup) release() {
	if g.job != 0 {
		windows.CloseHandle(g.job)
		g.job = 0
	}
}
