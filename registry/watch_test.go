package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type watchResult struct {
	reg *Registry
	err error
}

type watcher struct {
	t       *testing.T
	path    string
	results chan watchResult
	quiet   chan string
	cancel  context.CancelFunc
	done    chan error
	log     bytes.Buffer // read only after stop
}

// startWatch runs Watch on path with a short debounce and collects what it
// reports; every wait below is on a channel with a deadline.
func startWatch(t *testing.T, path string) *watcher {
	t.Helper()
	oldDebounce := WatchDebounce
	WatchDebounce = 20 * time.Millisecond
	w := &watcher{t: t, path: path, results: make(chan watchResult, 32), quiet: make(chan string, 32), done: make(chan error, 1)}
	watchHook = func(e string) { w.quiet <- e }
	oldLog := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&w.log, nil)))
	var ctx context.Context
	ctx, w.cancel = context.WithCancel(context.Background())
	go func() {
		w.done <- Watch(ctx, path, func(r *Registry, err error) { w.results <- watchResult{r, err} })
	}()
	t.Cleanup(func() {
		w.stop()
		watchHook = nil
		WatchDebounce = oldDebounce
		slog.SetDefault(oldLog)
	})
	return w
}

func (w *watcher) stop() {
	w.t.Helper()
	w.cancel()
	select {
	case err := <-w.done:
		if err != nil {
			w.t.Errorf("Watch returned %v after cancel", err)
		}
		w.done <- nil // later stops return at once
	case <-time.After(5 * time.Second):
		w.t.Fatal("Watch did not return after its context was cancelled")
	}
}

func (w *watcher) next() watchResult {
	w.t.Helper()
	select {
	case r := <-w.results:
		return r
	case <-time.After(5 * time.Second):
		w.t.Fatal("no report from Watch within 5s")
		return watchResult{}
	}
}

func (w *watcher) nextQuiet() string {
	w.t.Helper()
	select {
	case e := <-w.quiet:
		return e
	case r := <-w.results:
		w.t.Fatalf("Watch reported %v, %v; want nothing", r.reg, r.err)
	case <-time.After(5 * time.Second):
		w.t.Fatal("Watch did not reload within 5s")
	}
	return ""
}

// saveByRename writes like most editors: a temporary file, then a rename.
func saveByRename(t *testing.T, path, text string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".hub.toml.swp")
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

const (
	v1  = "[servers.a]\ncommand = \"x\"\n"
	v2  = v1 + "[servers.b]\ncommand = \"y\"\n"
	bad = v2 + "[hub]\nauth = \"maybe\"\n"
	// badServer has a problem confined to one server's entry.
	badServer = v2 + "[servers.c]\ncomand = \"z\"\n"
)

func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.toml")
	if err := os.WriteFile(path, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, path)

	// The current state is reported first.
	r := w.next()
	if r.err != nil || r.reg.Server("a") == nil {
		t.Fatalf("initial: %+v", r)
	}
	current := r.reg

	// A save by rename is picked up.
	saveByRename(t, path, v2)
	if r = w.next(); r.err != nil || r.reg.Server("b") == nil {
		t.Fatalf("after rename save: %+v", r)
	}
	current = r.reg

	// A save where one server's entry is bad reports the registry, with
	// that server's problem on it: the rest of the save is served.
	saveByRename(t, path, badServer)
	if r = w.next(); r.err != nil || r.reg.Server("b") == nil || !strings.Contains(r.reg.Server("c").Problem, "comand") {
		t.Fatalf("after a save with a bad server: %+v", r)
	}

	// A bad save reports every problem; the caller keeps the last good one.
	saveByRename(t, path, bad)
	r = w.next()
	var errs Errors
	if r.reg != nil || !errors.As(r.err, &errs) || errs[0].Line != 6 {
		t.Fatalf("after bad save: %+v", r)
	}
	if current.Server("b") == nil {
		t.Fatal("lost the last good registry")
	}

	// Fixing it reloads. (Saves here are atomic renames, so the debounce
	// never sees a half-written file and every step reports exactly once.)
	saveByRename(t, path, v1)
	if r = w.next(); r.err != nil || r.reg.Server("b") != nil {
		t.Fatalf("after fixing: %+v", r)
	}

	// Saving the same bytes again reports nothing.
	saveByRename(t, path, v1)
	if e := w.nextQuiet(); e != "same" {
		t.Fatalf("identical rewrite: %q", e)
	}

	// Delete reports an error once; recreating the same content reloads.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if r = w.next(); !errors.Is(r.err, fs.ErrNotExist) {
		t.Fatalf("after delete: %+v", r)
	}
	saveByRename(t, path, v1)
	if r = w.next(); r.err != nil || r.reg.Server("a") == nil {
		t.Fatalf("after recreate: %+v", r)
	}

	// Other files in the directory are not the registry.
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "other.toml"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	saveByRename(t, path, v2)
	if r = w.next(); r.err != nil || r.reg.Server("b") == nil {
		t.Fatalf("after other file and save: %+v", r)
	}

	w.stop()
	if log := w.log.String(); !strings.Contains(log, "keeping the last good registry") || !strings.Contains(log, "hub.auth") {
		t.Errorf("the bad save was not logged:\n%s", log)
	}
}

func TestWatchStartsWithMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.toml")
	w := startWatch(t, path)
	if r := w.next(); !errors.Is(r.err, fs.ErrNotExist) {
		t.Fatalf("initial: %+v", r)
	}
	saveByRename(t, path, v1)
	if r := w.next(); r.err != nil || r.reg.Server("a") == nil {
		t.Fatalf("after create: %+v", r)
	}
}

func TestWatchReportsRemovalOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.toml")
	var calls []error
	var quiet []string
	watchHook = func(e string) { quiet = append(quiet, e) }
	oldLog := slog.Default()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	defer func() { watchHook = nil; slog.SetDefault(oldLog) }()
	st := &watchState{path: path, fn: func(_ *Registry, err error) { calls = append(calls, err) }}
	st.reload()
	st.reload()
	if len(calls) != 1 || !errors.Is(calls[0], fs.ErrNotExist) || len(quiet) != 1 || quiet[0] != "missing" {
		t.Fatalf("calls %v quiet %v", calls, quiet)
	}
}

func TestWatchFailsAtOnceOnMissingDirectory(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := Watch(ctx, filepath.Join(t.TempDir(), "no", "such", "hub.toml"), func(*Registry, error) {
		t.Error("fn called")
	})
	if err == nil {
		t.Fatal("Watch on a missing directory returned nil")
	}
}

// A token file replaced on disk (mcphub token --force) reports the
// registry in force again, so the hub reads the new token; in another
// directory than the registry's too.
func TestWatchTokenFile(t *testing.T) {
	for _, sub := range []string{"", "secrets"} {
		dir := t.TempDir()
		tokDir := filepath.Join(dir, sub)
		if err := os.MkdirAll(tokDir, 0o700); err != nil {
			t.Fatal(err)
		}
		tok := filepath.Join(tokDir, "tok")
		path := filepath.Join(dir, "hub.toml")
		src := fmt.Sprintf("[hub]\nauth = \"token\"\ntoken_file = %q\n[servers.a]\ncommand = \"x\"\n", tok)
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		w := startWatch(t, path)
		if r := w.next(); r.err != nil {
			t.Fatalf("initial: %+v", r)
		}
		saveByRename(t, tok, "new-token\n")
		if r := w.next(); r.err != nil || r.reg.Hub.TokenFile != tok {
			t.Fatalf("%q: after the token file changed: %+v", sub, r)
		}
		w.stop()
	}
}
