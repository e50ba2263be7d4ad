package service

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Installed is what Install reports.
type Installed struct {
	// State is the service's state after it was started.
	State State
	// Holder is the pid of a live hub that served the data directory
	// when the service started, 0 for none: the service takes over once
	// it stops.
	Holder int
}

// Install writes the planned service and starts it. An installed service
// is refused unless the request says Force, and then removed first, but
// only once a Windows password is in hand, so that a refused reinstall
// keeps the old service.
func (h Host) Install(p *Plan) (Installed, error) {
	m, err := h.Open(p.Config)
	if err != nil {
		return Installed{}, fmt.Errorf("service manager: %w", err)
	}
	st, err := h.state(m)
	if err != nil {
		return Installed{}, err
	}
	if st.Installed && !p.req.Force {
		return Installed{}, fmt.Errorf("the mcphub service is installed already (%s, %s): reinstall it with mcphub service install --force, or remove it first with mcphub service uninstall", st.UnitFile, st.State)
	}
	if h.GOOS == "windows" {
		// Asked for only now that the install goes ahead. m was opened
		// with p.Config, whose Option map its Install reads.
		password, err := p.req.accountPassword(p.Account)
		if err != nil {
			return Installed{}, err
		}
		p.Config.Option["Password"] = password
	}
	if st.Installed {
		if err := h.remove(m, st); err != nil {
			return Installed{}, err
		}
	}
	if h.GOOS == "darwin" {
		// launchd opens its log files there and creates no directory.
		if err := os.MkdirAll(p.DataDir, 0o700); err != nil {
			return Installed{}, fmt.Errorf("data directory: %w", err)
		}
	}
	if err := m.Install(); err != nil {
		// A unit written but not enabled would make the next install say
		// it is installed already.
		if h.GOOS != "windows" {
			os.Remove(st.UnitFile)
		}
		return Installed{}, explain(h.GOOS, "install", err)
	}
	var holder int
	if p.req.Holder != nil {
		holder = p.req.Holder()
	}
	if err := m.Start(); err != nil {
		return Installed{}, fmt.Errorf("the mcphub service is installed (%s) but did not start; see mcphub logs: %w", st.UnitFile, explain(h.GOOS, "start", err))
	}
	if st, err = h.state(m); err != nil {
		return Installed{}, err
	}
	return Installed{State: st, Holder: holder}, nil
}

// accountPassword gets the password of account, which Windows needs to
// run the service as that account: from the first line of stdin with
// --password-stdin, else from the terminal, without echo. It is never
// printed, logged or put in an error.
func (r Request) accountPassword(account string) (string, error) {
	t := r.Terminal
	var password []byte
	switch {
	case r.PasswordStdin:
		line, err := bufio.NewReader(io.LimitReader(t.Stdin, 4096)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("--password-stdin: reading stdin: %w", err)
		}
		password = []byte(strings.TrimRight(line, "\r\n"))
	case !t.IsTerminal():
		return "", fmt.Errorf("the mcphub service runs as you (%s), and Windows needs your password to start it as you, but stdin is not a terminal to ask for it on: run mcphub service install in a terminal, or pipe the password in with mcphub service install --password-stdin", account)
	default:
		fmt.Fprintf(t.Prompt, "Windows password of %s, for the service to run as you (not shown): ", account)
		var err error
		password, err = t.ReadPassword()
		fmt.Fprintln(t.Prompt)
		if err != nil {
			return "", fmt.Errorf("reading the password: %w", err)
		}
	}
	if len(password) == 0 {
		return "", fmt.Errorf("no password given for %s: Windows runs a service only as an account that has a password; type it when asked, or pipe it in with --password-stdin (an account without one needs one set first)", account)
	}
	return string(password), nil
}
