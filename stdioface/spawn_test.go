package stdioface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcphub/mcphub/hubclient"
)

const finderToken = "finder-secret-token-0123456789"

// finderRegistry writes a registry listening on listen with auth on, its
// token in a file, and one server, and returns its path.
func finderRegistry(t *testing.T, dir, listen string) string {
	t.Helper()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(finderToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "hub.toml")
	text := fmt.Sprintf("[hub]\nlisten = %q\nauth = \"token\"\ntoken_file = %q\n\n[servers.weather]\ncommand = \"echo\"\n", listen, tokenFile)
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return config
}

// closedAddr is a loopback address nothing listens at.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestFinderCandidates: the face looks for its hub where its registry
// listens and where the live hub holding the data directory, when it serves
// this registry, recorded it listens; never at a dead hub's record, nor at a
// hub serving another registry.
func TestFinderCandidates(t *testing.T) {
	t.Setenv("MCPHUB_TOKEN", "")
	dir := t.TempDir()
	own := closedAddr(t)
	config := finderRegistry(t, dir, own)
	dataDir := filepath.Join(dir, "data")
	finder, err := NewFinder(Config{ConfigPath: config, DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	listens := func() (out []string) {
		for _, c := range finder.candidates() {
			out = append(out, c.Listen+"/"+c.Token)
		}
		return out
	}
	ownWant := own + "/" + finderToken
	// A dead hub's record: no lock.
	stale, _ := json.Marshal(hubclient.RunInfo{PID: 4242, Listen: "127.0.0.1:7777", Config: config})
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, hubclient.RunFileName), stale, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := listens(); len(got) != 1 || got[0] != ownWant {
		t.Errorf("candidates with a dead hub's record = %v; want only %s", got, own)
	}
	// A live hub serving another registry, at this registry's address.
	release, err := hubclient.LockDataDir(dataDir, hubclient.RunInfo{PID: os.Getpid(), Listen: own, Config: filepath.Join(dir, "other.toml")})
	if err != nil {
		t.Fatal(err)
	}
	if got := listens(); len(got) != 1 || got[0] != own+"/" {
		t.Errorf("candidates with another registry's hub at this address = %v; want %s without the token", got, own)
	}
	release()
	// A live hub serving this registry on another port.
	release, err = hubclient.LockDataDir(dataDir, hubclient.RunInfo{PID: os.Getpid(), Listen: "127.0.0.1:7777", Config: config})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if got := listens(); len(got) != 2 || got[0] != ownWant || got[1] != "127.0.0.1:7777/"+finderToken {
		t.Errorf("candidates with this registry's hub on another port = %v; want %s, then 127.0.0.1:7777, with the token", got, own)
	}
}

// TestProbe: /healthz answered 200 is a hub; nothing listening is
// hubclient.ErrNoHub; a 401 says the token was refused; anything else says
// that something other than mcphub answers.
func TestProbe(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	at := hubclient.Target{Listen: strings.TrimPrefix(srv.URL, "http://")}
	ctx := context.Background()
	if err := Probe(ctx, at); err != nil {
		t.Errorf("Probe of a hub that answers: %v", err)
	}
	if err := Probe(ctx, hubclient.Target{Listen: closedAddr(t)}); !errors.Is(err, hubclient.ErrNoHub) {
		t.Errorf("Probe of a closed port: %v, want hubclient.ErrNoHub", err)
	}
	status = http.StatusUnauthorized
	var wrong *wrongAnswerError
	if err := Probe(ctx, at); !errors.As(err, &wrong) || err.Error() != at.TokenRefused().Error() {
		t.Errorf("Probe of a hub that refuses the token: %v, want %q", err, at.TokenRefused())
	}
	status = http.StatusTeapot
	if err := Probe(ctx, at); err == nil || !strings.Contains(err.Error(), "something other than mcphub answers at "+at.Listen+" (HTTP 418") {
		t.Errorf("Probe of another program: %v", err)
	}
}

// TestEnsureWithoutRegistry: with no hub running and no registry loaded,
// none is started, and the error says why.
func TestEnsureWithoutRegistry(t *testing.T) {
	dir := t.TempDir()
	finder, err := NewFinder(Config{ConfigPath: filepath.Join(dir, "hub.toml"), DataDir: filepath.Join(dir, "data"), Executable: "/nonexistent/mcphub"})
	if err != nil {
		t.Fatal(err)
	}
	finder.reg = nil
	_, started, err := finder.ensure(context.Background())
	if started || err == nil || !strings.Contains(err.Error(), "no hub is running and the registry") {
		t.Errorf("ensure without a registry: started %v, %v", started, err)
	}
}

// TestRetryDelay: delays double from base up to max, each between half
// and all of its step.
func TestRetryDelay(t *testing.T) {
	r := newRetryDelay(100*time.Millisecond, time.Second)
	for i, step := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		step *= time.Millisecond
		if d := r.next(); d < step/2 || d > step {
			t.Errorf("attempt %d: %s, want between %s and %s", i, d, step/2, step)
		}
	}
}
