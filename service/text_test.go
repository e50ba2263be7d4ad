package service

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kservice "github.com/kardianos/service"

	"github.com/mcphub/mcphub/service/servicetest"
)

// TestWriteState names the unit file as the OS calls it, and says how to
// install a service that is not installed.
func TestWriteState(t *testing.T) {
	var out bytes.Buffer
	Host{GOOS: "darwin"}.WriteState(&out, State{State: "not installed", UnitFile: "/u/mcphub.plist"})
	if want := "mcphub service: not installed\nlaunchd agent: /u/mcphub.plist\ninstall it with: mcphub service install\n"; out.String() != want {
		t.Errorf("state = %q, want %q", out.String(), want)
	}
	out.Reset()
	Host{GOOS: "linux"}.WriteState(&out, State{Installed: true, State: "restarting", UnitFile: "/u/mcphub.service"})
	if want := "mcphub service: restarting (failing): see mcphub logs\nunit file: /u/mcphub.service\n"; out.String() != want {
		t.Errorf("state = %q, want %q", out.String(), want)
	}
	if (Host{GOOS: "windows"}).NextStart() != "boot" || (Host{GOOS: "linux"}).NextStart() != "login" {
		t.Error("NextStart")
	}
}

// TestInstallText names the variables the service lacks (never their
// values), the token it cannot find and a hub that holds the data
// directory, and ends with where to look next.
func TestInstallText(t *testing.T) {
	var opened []*kservice.Config
	h := fakeHost(t, "linux", &servicetest.Manager{}, &opened)
	dir := t.TempDir()
	p, err := h.PlanInstall(testRequest(filepath.Join(dir, "hub.toml"), dir))
	if err != nil {
		t.Fatal(err)
	}
	done, err := h.Install(p)
	if err != nil {
		t.Fatal(err)
	}
	done.Holder = 4242
	hub := HubConfig{TokenAuth: true, TokenFile: filepath.Join(dir, "token"),
		Servers: []ServerVars{{Name: "github", Vars: []string{"GITHUB_TOKEN"}}, {Name: "aws", Vars: []string{"AWS_SECRET_ACCESS_KEY", "UNSET_ONE"}}}}
	text := strings.Join(h.InstallText(p, done, hub), "\n")
	for _, want := range []string{
		"installed the mcphub service (",
		"it runs: /opt/mcphub/bin/mcphub serve --config ",
		"note: HTTP_PROXY holds credentials, so it is not written into the unit;",
		"note: auth is on but " + hub.TokenFile + " holds no token, so the service will not start: create one with mcphub token",
		"note: server github uses ${GITHUB_TOKEN} from this shell, which the service does not get: under the service it goes without it",
		"note: server aws uses ${AWS_SECRET_ACCESS_KEY} from this shell",
		"note: [hub] env_passthrough does not help, since the service's own environment lacks them; to give them to the service",
		"note: a hub (pid 4242) already serves " + dir + "; the service takes over once it stops",
		"loginctl enable-linger $USER",
		"logs:   mcphub logs -f\nstatus: mcphub service status",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("install text lacks %q:\n%s", want, text)
		}
	}
	for _, s := range servicetest.Secrets {
		if strings.Contains(text, s) {
			t.Errorf("install text holds a secret value:\n%s", text)
		}
	}
	if err := os.WriteFile(hub.TokenFile, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(h.InstallText(p, done, hub), "\n"); strings.Contains(text, "auth is on") {
		t.Errorf("a token file the shell agrees with needs no note:\n%s", text)
	}
}

// TestCheckExecutable refuses a binary go run built, and says why none
// was found.
func TestCheckExecutable(t *testing.T) {
	if exe, err := CheckExecutable("/usr/bin/mcphub", false, nil); exe != "/usr/bin/mcphub" || err != nil {
		t.Errorf("installed binary: %q, %v", exe, err)
	}
	if _, err := CheckExecutable("/tmp/go-build1/exe/mcphub", true, nil); err == nil || !strings.Contains(err.Error(), "go install ./cmd/mcphub") {
		t.Errorf("go run binary: %v", err)
	}
	cause := errors.New("no such file")
	if _, err := CheckExecutable("", false, cause); !errors.Is(err, cause) {
		t.Errorf("lost the cause: %v", err)
	}
}
