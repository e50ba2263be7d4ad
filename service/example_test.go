package service_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	kservice "github.com/kardianos/service"

	"github.com/mcphub/mcphub/service"
)

// manager is a service manager that keeps the service in memory, standing
// for systemd here.
type manager struct{ installed, running bool }

func (m *manager) Install() error   { m.installed = true; return nil }
func (m *manager) Uninstall() error { m.installed, m.running = false, false; return nil }
func (m *manager) Start() error     { m.running = true; return nil }
func (m *manager) Stop() error      { m.running = false; return nil }
func (m *manager) Status() (kservice.Status, error) {
	switch {
	case !m.installed:
		return kservice.StatusUnknown, kservice.ErrNotInstalled
	case m.running:
		return kservice.StatusRunning, nil
	}
	return kservice.StatusStopped, nil
}

// The CLI plans the unit from what it knows (the binary, --config,
// --data-dir, how to tell a proxy URL with credentials), installs it, and
// then controls it. A real caller starts from service.NewHost().
func Example() {
	m := &manager{}
	h := service.Host{
		GOOS:     "linux",
		Platform: "linux-systemd",
		Environ: func() []string {
			return []string{"PATH=/usr/bin", "HTTPS_PROXY=http://me:secret@proxy:3128", "GITHUB_TOKEN=x"}
		},
		HomeDir:   func() (string, error) { return "/home/u", nil },
		Probe:     func() error { return nil },
		UnitState: func() (string, string, error) { return "active", "running", nil },
		Open:      func(*kservice.Config) (service.Manager, error) { return m, nil },
	}
	p, err := h.PlanInstall(service.Request{
		Executable: func() (string, error) { return "/usr/local/bin/mcphub", nil },
		ConfigPath: "/home/u/.config/mcphub/hub.toml",
		DataDir:    "/home/u/.local/state/mcphub",
		Credential: func(v string) string {
			if strings.Contains(v, "@") {
				return "credential"
			}
			return ""
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("runs:", strings.Join(p.Command, " "))
	fmt.Println("held back:", p.Held)
	fmt.Println("shell only:", p.ShellOnly([]string{"GITHUB_TOKEN", "PATH"}))

	done, err := h.Install(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(done.State.State, done.State.UnitFile)
	st, _ := h.Stop()
	fmt.Println(st.State)
	// Output:
	// runs: /usr/local/bin/mcphub serve --config /home/u/.config/mcphub/hub.toml --data-dir /home/u/.local/state/mcphub
	// held back: [HTTPS_PROXY]
	// shell only: [GITHUB_TOKEN]
	// running /home/u/.config/systemd/user/mcphub.service
	// stopped
}

// serve hands its work to Run first: under the Windows service control
// manager Run serves and answers the manager; anywhere else it returns
// handled=false at once and serve runs as from a shell.
func ExampleRun() {
	serve := func(ctx context.Context) error { return nil }
	handled, err := service.Run(serve)
	if !handled {
		err = serve(context.Background())
	}
	fmt.Println(handled, err)
	// Output: false <nil>
}

// status prints the state for a person as the Host's OS names the unit;
// --json prints the State itself.
func ExampleHost_WriteState() {
	h := service.Host{GOOS: "linux"}
	h.WriteState(os.Stdout, service.State{Installed: true, State: "running", UnitFile: "/home/u/.config/systemd/user/mcphub.service"})
	// Output:
	// mcphub service: running
	// unit file: /home/u/.config/systemd/user/mcphub.service
}
