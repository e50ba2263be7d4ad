package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/hubclient"
)

// TestRunFileFindsHubOnAnotherPort: a hub started with serve --listen
// 127.0.0.1:0 listens on a port the kernel picked, not the registry's; status,
// list and connect find it through its run file, with the registry's token.
// A command given another registry does not send that hub its token: it
// asks its own registry's address, and says which registry the hub holding
// the data directory serves.
func TestRunFileFindsHubOnAnotherPort(t *testing.T) {
	t.Setenv("MCPHUB_TOKEN", "")
	h := newProcHub(t)
	const token = "runfile-test-token"
	tokenFile := filepath.Join(h.home, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.token = token
	h.write(t, h.registry(fmt.Sprintf("auth = \"token\"\ntoken_file = %q", tokenFile), demoServer(h.bin, "demo")))
	r := h.start(nil, "--listen", "127.0.0.1:0")
	var info *hubclient.RunInfo
	eventually(t, 20*time.Second, "the hub records where it listens", func() error {
		if !r.running() {
			t.Fatalf("mcphub serve exited: %v", r.werr)
		}
		if info = hubclient.LiveRunInfo(h.data); info == nil {
			return errors.New("no live hub in the run file")
		}
		if _, err := readyzOf("http://"+info.Listen, token); err != nil {
			return err
		}
		return nil
	})
	if info.Listen == h.addr || info.PID != r.pid() {
		t.Fatalf("run file %+v: want the pid %d and a port other than the registry's %s", info, r.pid(), h.addr)
	}
	flags := []string{"--config", h.cfg, "--data-dir", h.data}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(flags, args...)...)
	}
	code, out, errOut := cli("status")
	if code != 0 || !strings.Contains(out, info.Listen) || errOut != "" {
		t.Errorf("status: exit %d, stdout %q, stderr %q; want the hub at %s", code, out, errOut, info.Listen)
	}
	code, out, errOut = cli("list")
	if code != 0 || !strings.Contains(out, "hub running at http://"+info.Listen) || errOut != "" {
		t.Errorf("list: exit %d, stdout %q, stderr %q; want the hub at %s", code, out, errOut, info.Listen)
	}
	code, out, errOut = cli("connect", "cursor")
	if code != 0 || !strings.Contains(out, "http://"+info.Listen+"/mcp") {
		t.Errorf("connect cursor: exit %d, stdout %q, stderr %q; want the URL http://%s/mcp (connect.go must ask a.locator().For(reg, tok), not the registry's listen)",
			code, out, errOut, info.Listen)
	}
	if strings.Contains(out+errOut, token) && !strings.Contains(out, "Bearer "+token) {
		t.Errorf("connect shows the token outside the entry")
	}

	// Another registry on the same data directory: that hub is not sent
	// this registry's token (here the same token file: still not), the
	// registry's own address is asked, and a note says whose registry the
	// hub holding the data directory serves.
	other := filepath.Join(h.home, "other.toml")
	otherAddr := freeAddr(t)
	if err := os.WriteFile(other, fmt.Appendf(nil, "[hub]\nlisten = %q\nauth = \"token\"\ntoken_file = %q\n", otherAddr, tokenFile), 0o600); err != nil {
		t.Fatal(err)
	}
	flags = []string{"--config", other, "--data-dir", h.data}
	code, out, errOut = cli("status")
	if code != 1 || !strings.Contains(out, "no mcphub is running at "+otherAddr) || !strings.Contains(errOut, "serves another registry, "+h.cfg) || !strings.Contains(errOut, info.Listen) {
		t.Errorf("status with another registry: exit %d, stdout %q, stderr %q; want no hub at %s and a note naming %s at %s",
			code, out, errOut, otherAddr, h.cfg, info.Listen)
	}
	code, out, errOut = cli("list")
	if code != 0 || !strings.Contains(out, "no hub running at "+otherAddr) || !strings.Contains(errOut, "serves another registry, "+h.cfg) {
		t.Errorf("list with another registry: exit %d, stdout %q, stderr %q; want no hub at %s and a note naming %s",
			code, out, errOut, otherAddr, h.cfg)
	}
}
