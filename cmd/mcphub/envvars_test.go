package main

// Process-level tests of what a running hub does with the environment: the
// variables its stdio servers inherit, a server whose ${VAR} the hub's
// environment lacks, and `mcphub add` asking the hub about its variables.

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/api"
)

// A stdio server gets the safe set of the hub's environment (here the CA
// bundle and proxy a corporate network needs) and nothing else; one with
// inherit_env gets everything but the hub's token and the registry's
// secrets.
func TestChildEnvironmentThroughTheHub(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads a child's environment from /proc")
	}
	h := newProcHub(t)
	h.write(t, h.registry(`auth = "token"`,
		demoServer(h.bin, "plain"),
		demoServer(h.bin, "all", "OWN", "${ENVTEST_OTHER_SECRET}")+"inherit_env = true\n\n",
		demoServer(h.bin, "wide")+"env_passthrough = [\"ENVTEST_EXTRA_*\"]\n\n"))
	env := []string{"NODE_EXTRA_CA_CERTS=/etc/corp-ca.pem", "HTTPS_PROXY=http://proxy.corp:3128",
		"ENVTEST_UNRELATED=nope", "ENVTEST_EXTRA_ONE=1", "ENVTEST_OTHER_SECRET=s3cret", "MCPHUB_TOKEN=hub-token-value"}
	h.start(env)
	var st *api.Status
	eventually(t, 15*time.Second, "the servers connect", func() error {
		var err error
		if st, err = readyzOf(h.base(), "hub-token-value"); err != nil {
			return err
		}
		return connected("plain", "all", "wide")(st)
	})
	pid := func(name string) int { return findServer(st, name).PID }

	plain := procEnviron(t, pid("plain"))
	for _, k := range []string{"NODE_EXTRA_CA_CERTS", "HTTPS_PROXY", "PATH", "HOME"} {
		if _, ok := plain[k]; !ok {
			t.Errorf("plain server lacks %s; it has %q", k, keys(plain))
		}
	}
	for _, k := range []string{"ENVTEST_UNRELATED", "ENVTEST_EXTRA_ONE", "ENVTEST_OTHER_SECRET", "MCPHUB_TOKEN"} {
		if _, ok := plain[k]; ok {
			t.Errorf("plain server got %s", k)
		}
	}
	if wide := procEnviron(t, pid("wide")); wide["ENVTEST_EXTRA_ONE"] != "1" || wide["ENVTEST_UNRELATED"] != "" {
		t.Errorf("env_passthrough: the server's environment is %q", keys(wide))
	}
	all := procEnviron(t, pid("all"))
	if all["ENVTEST_UNRELATED"] != "nope" || all["OWN"] != "s3cret" {
		t.Errorf("inherit_env: the server's environment is %q", keys(all))
	}
	for _, k := range []string{"MCPHUB_TOKEN", "ENVTEST_OTHER_SECRET"} {
		if _, ok := all[k]; ok {
			t.Errorf("inherit_env passed the secret %s", k)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A save with one server whose variable the hub lacks and another server
// added: the added one connects and is callable, the first shows failed
// with the variable's name. `mcphub add` warns about it first, from the
// running hub's environment, not its own shell's.
func TestUnsetVariableFailsOneServerOnly(t *testing.T) {
	h := newProcHub(t)
	w := startWorld(t, h, nil, h.registry("", demoServer(h.bin, "a")), []string{"a"}, []string{"a__echo"})

	code, out, errOut := h.cli(t, []string{"ENVTEST_ONLY_IN_SHELL=x"},
		"add", "needs", "--env", "T=${ENVTEST_ONLY_IN_SHELL}", "--", h.bin, "demo")
	want := fmt.Sprintf("ENVTEST_ONLY_IN_SHELL is not set in the running hub (pid %d)", w.run.pid())
	if code != 0 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "mcphub disable needs") {
		t.Fatalf("mcphub add: exit %d, want 0 and a warning %q\n%s%s", code, want, out, errOut)
	}
	if strings.Contains(out+errOut, "=x") {
		t.Errorf("add printed the variable's value:\n%s%s", out, errOut)
	}

	// One save: b added beside the server the hub cannot expand.
	h.write(t, h.registry("", demoServer(h.bin, "a"), demoServer(h.bin, "needs", "T", "${ENVTEST_ONLY_IN_SHELL}"), demoServer(h.bin, "b")))
	st := h.waitStatus(t, w.run, 15*time.Second, "b connects and needs fails", func(st *api.Status) error {
		if err := connected("a", "b")(st); err != nil {
			return err
		}
		if s := findServer(st, "needs"); s == nil || s.State != api.StateFailed {
			return fmt.Errorf("needs is %+v, want failed", s)
		}
		return nil
	})
	needs := findServer(st, "needs")
	if !strings.Contains(needs.LastError, "${ENVTEST_ONLY_IN_SHELL} is not set") || !strings.Contains(needs.LastError, "hub.toml:") {
		t.Errorf("needs: last error %q does not name the variable and the line", needs.LastError)
	}
	if st.RegistryError != "" {
		t.Errorf("the hub reports the whole registry as bad: %s", st.RegistryError)
	}
	w.s.waitTools(t, []string{"a__echo", "b__echo"}, nil)
	if got, err := w.s.callText(t.Context(), "b__echo", map[string]any{"text": "hi"}); err != nil || !strings.Contains(got, "hi") {
		t.Errorf("b__echo: %q, %v", got, err)
	}

	// status shows it too, with the reason.
	if code, out, errOut := h.cli(t, nil, "status"); code != 0 || !strings.Contains(out, "needs") || !strings.Contains(out, "ENVTEST_ONLY_IN_SHELL") {
		t.Errorf("mcphub status: exit %d\n%s%s", code, out, errOut)
	}
}
