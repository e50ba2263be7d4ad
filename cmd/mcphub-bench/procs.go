package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// Starting the processes the bench measures, and waiting until they answer.

// proc is a process the bench started and must stop.
type proc struct {
	cmd  *exec.Cmd
	name string
}

func start(name string, stderr io.Writer, bin string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return &proc{cmd: cmd, name: name}, nil
}

// rssKB reads the process's resident set size; ok is false where it is not
// measured.
func (p *proc) rssKB() (kb int, ok bool) { return rssKB(p.cmd.Process.Pid) }

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitReady polls a hub's /readyz until every server is connected.
func waitReady(addr string, want int, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < limit {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			var st struct {
				Servers []struct{ State string } `json:"servers"`
			}
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			n := 0
			for _, s := range st.Servers {
				if s.State == "connected" {
					n++
				}
			}
			if n >= want {
				return time.Since(start), nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s: not all %d servers connected within %s", addr, want, limit)
}

// waitHTTP polls until something answers at url.
func waitHTTP(url string, limit time.Duration) error {
	start := time.Now()
	for time.Since(start) < limit {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("nothing answers at %s", url)
}

// startHub starts mcphub serve on a registry and waits until it is ready.
func startHub(mcphub, dir, registry string, servers int, extra ...string) (*proc, string, time.Duration, error) {
	addr, err := freePort()
	if err != nil {
		return nil, "", 0, err
	}
	os.MkdirAll(dir, 0o700)
	cfg := filepath.Join(dir, "hub.toml")
	text := fmt.Sprintf("[hub]\nlisten = %q\nmax_sessions_per_server = 100\n\n%s", addr, registry)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		return nil, "", 0, err
	}
	logf, _ := os.Create(filepath.Join(dir, "hub.log"))
	level := "warn"
	if keep {
		level = "debug"
	}
	args := append([]string{"serve", "--config", cfg, "--data-dir", filepath.Join(dir, "data"), "--log-level", level}, extra...)
	p, err := start("mcphub", logf, mcphub, args...)
	if err != nil {
		return nil, "", 0, err
	}
	ready, err := waitReady(addr, servers, 30*time.Second)
	if err != nil {
		p.stop()
		return nil, "", 0, err
	}
	return p, addr, ready, nil
}

func buildMcphub(dir string) (string, error) {
	out := filepath.Join(dir, "mcphub")
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/mcphub")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build mcphub (run from the repository root, or pass -mcphub): %w", err)
	}
	return out, nil
}

// sampleRSS records the highest RSS of p until stopped.
func sampleRSS(p *proc, max *int) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if kb, _ := p.rssKB(); kb > *max {
				*max = kb
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
