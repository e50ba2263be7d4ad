package stdioface

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcphub/mcphub/hubclient"
	"github.com/mcphub/mcphub/registry"
)

// Finding the hub a stdio face relays to, and starting one in the background
// when none runs: `mcphub stdio` must work for a desktop client that knows
// nothing about hubs.

// ServeLogName is the file in the data directory that a hub started in the
// background writes its output to: the place to look when it fails to
// start or dies.
const ServeLogName = "serve.log"

// hubStartWait bounds how long a hub started in the background may take to
// answer.
const hubStartWait = 20 * time.Second

// Finder knows where a hub serving one registry and data directory may
// answer, and the token it wants, and starts one in the background when
// none does. The registry is read again each time the hub is looked for, so
// that a face that reconnects sends the token in force now: auth turned on
// in hub.toml, or a token file replaced, reaches the hub without a restart,
// and must reach the face too.
type Finder struct {
	configPath, dataDir string
	exe                 string    // the mcphub executable that serves a hub started here
	stderr              io.Writer // where starting one is reported
	loc                 hubclient.Locator

	mu  sync.Mutex
	reg *registry.Registry // the last registry that loaded; nil when none has
	tok string             // its bearer token, "" for none
}

// NewFinder is the finder for cfg's registry and data directory.
// cfg.Registry is the registry as it loaded (nil when it does not); its
// token is read here, and an error reading it is returned. Only
// ConfigPath, DataDir, Executable, Stderr and Registry are used.
func NewFinder(cfg Config) (*Finder, error) {
	tok := ""
	if cfg.Registry != nil {
		var err error
		if tok, err = hubclient.Token(cfg.Registry); err != nil {
			return nil, err
		}
	}
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	return &Finder{
		configPath: cfg.ConfigPath, dataDir: cfg.DataDir, exe: cfg.Executable, stderr: stderr,
		loc: hubclient.Locator{ConfigPath: cfg.ConfigPath, DataDir: cfg.DataDir},
		reg: cfg.Registry, tok: tok,
	}, nil
}

// current reads the registry and its token again. A registry that does not
// load now, or whose token cannot be read (a token file being replaced), leaves
// the last good one in force.
func (h *Finder) current() (*registry.Registry, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if reg, err := registry.LoadServing(h.configPath); err == nil {
		if tok, err := hubclient.Token(reg); err == nil {
			h.reg, h.tok = reg, tok
		}
	}
	return h.reg, h.tok
}

// candidates are the addresses to try, in order: the registry's listen
// address (unless it asks for any free port), then the one the live hub
// holding the data directory recorded, which differs when it was started
// with --listen or port 0. A live hub that serves another registry is not a
// candidate, and gets no token of this registry's even when it listens at
// the registry's address.
func (h *Finder) candidates() []hubclient.Target {
	reg, tok := h.current()
	info := hubclient.LiveRunInfo(h.dataDir)
	var out []hubclient.Target
	if reg != nil && !strings.HasSuffix(reg.Hub.Listen, ":0") {
		own := hubclient.TargetOf(reg.Hub, tok)
		if info != nil && !h.loc.Serves(info) {
			own = hubclient.OwnTarget(reg.Hub, tok, info)
		}
		out = append(out, own)
	}
	if info != nil && h.loc.Serves(info) {
		t := hubclient.RunTarget(info, tok)
		if len(out) == 0 || out[0].Listen != t.Listen {
			out = append(out, t)
		}
	}
	return out
}

// Find returns the first place at which a hub serving the registry answers
// /healthz: the registry's listen address, then where the live hub holding
// the data directory recorded it listens. It is hubclient.ErrNoHub when
// none does; a hub that answers but refuses the token, or something else on
// the port, is reported as it is. It suits Options.Find.
func (h *Finder) Find(ctx context.Context) (hubclient.Target, error) {
	var firstErr error
	for _, t := range h.candidates() {
		err := Probe(ctx, t)
		if err == nil {
			return t, nil
		}
		if firstErr == nil || errors.Is(firstErr, hubclient.ErrNoHub) && !errors.Is(err, hubclient.ErrNoHub) {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = hubclient.ErrNoHub
	}
	return hubclient.Target{}, firstErr
}

// Probe asks the hub at t for /healthz once: nil when it answers as a hub
// that takes t's token, hubclient.ErrNoHub (wrapped) when nothing accepts
// the connection, and a sentence saying what answered otherwise (a refused
// token, another program on the port). A test's Options.Find can be Probe
// of a fixed target.
func Probe(ctx context.Context, t hubclient.Target) error {
	ctx, cancel := context.WithTimeout(ctx, hubclient.StatusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL("/healthz"), nil)
	if err != nil {
		return err
	}
	resp, err := t.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusUnauthorized:
		return &wrongAnswerError{t.TokenRefused().Error()}
	}
	if reason := hubclient.Reason(body); reason != "" {
		return &wrongAnswerError{fmt.Sprintf("the hub at %s refused: %s", t.Listen, reason)}
	}
	return &wrongAnswerError{fmt.Sprintf("something other than mcphub answers at %s (HTTP %d to /healthz)", t.Listen, resp.StatusCode)}
}

// wrongAnswerError means something answered /healthz, but not as a hub this
// command may use does; any other error of Probe is the network's.
type wrongAnswerError struct{ msg string }

func (e *wrongAnswerError) Error() string { return e.msg }

// ensure finds the running hub or, when none answers, starts one in the
// background and waits for it. started reports that this call started it.
func (h *Finder) ensure(ctx context.Context) (t hubclient.Target, started bool, err error) {
	t, err = h.Find(ctx)
	if !errors.Is(err, hubclient.ErrNoHub) {
		return t, false, err
	}
	h.mu.Lock()
	loaded := h.reg != nil
	h.mu.Unlock()
	if !loaded {
		return hubclient.Target{}, false, fmt.Errorf("no hub is running and the registry %s does not load, so none can be started", h.configPath)
	}
	bg, err := startHubProcess(h.exe, h.configPath, h.dataDir)
	if err != nil {
		return hubclient.Target{}, false, err
	}
	t, err = h.awaitStarted(ctx, bg)
	if err != nil {
		return hubclient.Target{}, false, err
	}
	if info := hubclient.LiveRunInfo(h.dataDir); info == nil || info.PID != bg.pid {
		// Another face or a user started one at the same time, and the
		// one started here gives way (it cannot have the data directory).
		return t, false, nil
	}
	fmt.Fprintf(h.stderr, "mcphub: started a hub in the background (pid %d) at %s; its log: %s\n", bg.pid, t.URL("/mcp"), bg.logPath)
	return t, true, nil
}

// awaitStarted polls /healthz with backoff until a hub answers or
// hubStartWait passes. A started process that exits first is not an error
// when some other hub answers instead (two faces raced to start one, and the
// second `serve` refused the data directory); otherwise the error shows the
// end of what it wrote.
//
// Only an answer that is not a hub's ends the wait early. serve binds its
// address before it takes the data directory and long before it answers:
// until then a connection is accepted and left unanswered, and reset when
// a serve that cannot have the directory exits. That is a hub not ready
// yet, and its exit says why.
func (h *Finder) awaitStarted(ctx context.Context, bg *bgHub) (hubclient.Target, error) {
	ctx, cancel := context.WithTimeout(ctx, hubStartWait)
	defer cancel()
	b := newRetryDelay(50*time.Millisecond, time.Second)
	for {
		t, err := h.Find(ctx)
		if err == nil {
			return t, nil
		}
		var wrong *wrongAnswerError
		if errors.As(err, &wrong) {
			return hubclient.Target{}, err
		}
		select {
		case <-bg.exited:
			if t, err := h.Find(ctx); err == nil {
				return t, nil
			}
			return hubclient.Target{}, fmt.Errorf("the hub started in the background (pid %d) exited: %v; the end of %s:\n%s", bg.pid, bg.waitErr, bg.logPath, bg.logTail())
		case <-time.After(b.next()):
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return hubclient.Target{}, fmt.Errorf("the hub started in the background (pid %d) did not answer within %s; see %s", bg.pid, hubStartWait, bg.logPath)
			}
			return hubclient.Target{}, ctx.Err()
		}
	}
}

// bgHub is a `mcphub serve` started in the background.
type bgHub struct {
	pid     int
	logPath string
	logFrom int64         // the size of the log before it started
	exited  chan struct{} // closed when the process exits
	waitErr error         // how it exited; set before exited is closed
}

// logTail is the end of what the process wrote to its log.
func (b *bgHub) logTail() string {
	f, err := os.Open(b.logPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	const keep = 4 << 10
	from := b.logFrom
	if st, err := f.Stat(); err == nil && st.Size()-from > keep {
		from = st.Size() - keep
	}
	data, _ := io.ReadAll(io.NewSectionReader(f, from, keep))
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "(nothing)"
	}
	return string(data)
}

// startHubProcess starts exe, an mcphub, as `mcphub serve` on the registry and data directory,
// detached from this process (its own session or process group, no
// console), so that it outlives the client that started it. Its output is
// appended to serve.log in the data directory. The process is waited for in
// the background, so it leaves no zombie while this process lives.
func startHubProcess(exe, configPath, dataDir string) (*bgHub, error) {
	if exe == "" {
		return nil, errors.New("start a hub: no mcphub executable to start it with")
	}
	cfg, err := filepath.Abs(configPath)
	if err != nil {
		return nil, fmt.Errorf("start a hub: %w", err)
	}
	data, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("start a hub: %w", err)
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, fmt.Errorf("start a hub: data directory: %w", err)
	}
	bg := &bgHub{logPath: filepath.Join(data, ServeLogName), exited: make(chan struct{})}
	logFile, err := os.OpenFile(bg.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start a hub: %w", err)
	}
	defer logFile.Close() // the child has its own copy
	if st, err := logFile.Stat(); err == nil {
		bg.logFrom = st.Size()
	}
	fmt.Fprintf(logFile, "--- %s: started by mcphub stdio (pid %d)\n", time.Now().Format(time.RFC3339), os.Getpid())
	cmd := exec.Command(exe, "serve", "--config", cfg, "--data-dir", data)
	cmd.Stdin = nil // the null device
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = data
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start a hub: %w", err)
	}
	bg.pid = cmd.Process.Pid
	go func() {
		bg.waitErr = cmd.Wait()
		close(bg.exited)
	}()
	return bg, nil
}

// retryDelay computes jittered exponential delays between attempts, from
// base up to max.
type retryDelay struct {
	base, max time.Duration
	attempt   int
}

func newRetryDelay(base, max time.Duration) *retryDelay {
	return &retryDelay{base: base, max: max}
}

// next is the delay before the next attempt: doubled each time, capped, and
// between half and all of that, so that many faces do not retry in step.
func (r *retryDelay) next() time.Duration {
	d := r.base << min(r.attempt, 16)
	if d > r.max || d <= 0 {
		d = r.max
	}
	r.attempt++
	return d/2 + rand.N(d/2+1)
}
