package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/filelock"
)

// serverNames returns the names of the servers in the file at path, which
// must parse.
func serverNames(t *testing.T, path string) map[string]bool {
	t.Helper()
	reg, err := Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, readFile(t, path))
	}
	names := map[string]bool{}
	for _, s := range reg.Servers {
		names[s.Name] = true
	}
	return names
}

// appendInPlace appends text to the file at path the way `>>` does.
func appendInPlace(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// hookOnce runs fn the first time an edit reaches stage.
func hookOnce(t *testing.T, stage string, fn func()) {
	t.Helper()
	var once sync.Once
	editHook = func(s string) {
		if s == stage {
			once.Do(fn)
		}
	}
	t.Cleanup(func() { editHook = nil })
}

// exchangeSupported reports whether files in dir can be exchanged
// atomically, so that a save landing between an edit's last check and its
// replace is seen.
func exchangeSupported(t *testing.T, dir string) bool {
	t.Helper()
	a, b := filepath.Join(dir, "probe-a"), filepath.Join(dir, "probe-b")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
	}
	return !errors.Is(filelock.Exchange(a, b), filelock.ErrExchangeUnsupported)
}

const extBlock = "\n[servers.ext]\ncommand = \"outside\"\n"

// Edits from many goroutines at once (each opens the lock file itself, as
// a process does) all land: none fails, none is lost.
func TestEditsAtOnceAllLand(t *testing.T) {
	path := writeFile(t, commented, 0o600)
	const adds = 24
	var wg sync.WaitGroup
	errs := make(chan error, adds+2)
	for i := range adds {
		wg.Go(func() { errs <- AddServer(path, ServerSpec{Name: fmt.Sprintf("s%d", i), Command: "x"}, false) })
	}
	wg.Go(func() { errs <- RemoveServer(path, "alpha") })
	wg.Go(func() { errs <- SetEnabled(path, "beta", false) })
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	names := serverNames(t, path)
	for i := range adds {
		if !names[fmt.Sprintf("s%d", i)] {
			t.Errorf("s%d is missing", i)
		}
	}
	if names["alpha"] || !names["gamma"] {
		t.Errorf("servers after the edits: %v", names)
	}
	if reg, _ := Load(path); reg == nil || reg.Server("beta").Enabled {
		t.Error("beta is still enabled")
	}
	assertNoTempFiles(t, filepath.Dir(path))
}

// An edit waits for another holder of the edit lock, up to its timeout,
// and then fails naming the lock file, having changed nothing.
func TestEditWaitsForTheLock(t *testing.T) {
	path := writeFile(t, commented, 0o600)
	held, err := os.OpenFile(lockPath(path), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := filelock.TryLock(held); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { editLockTimeout = d }(editLockTimeout)
	editLockTimeout = 50 * time.Millisecond
	err = AddServer(path, ServerSpec{Name: "late", Command: "x"}, false)
	if !errors.Is(err, ErrEditLocked) || !strings.Contains(err.Error(), lockPath(path)) || !strings.Contains(err.Error(), "50ms") {
		t.Fatalf("edit while another holds the lock = %v; want ErrEditLocked naming %s and the wait", err, lockPath(path))
	}
	if readFile(t, path) != commented {
		t.Fatal("an edit that did not get the lock changed the file")
	}

	editLockTimeout = 10 * time.Second
	done := make(chan error, 1)
	go func() { done <- RemoveServer(path, "alpha") }()
	select {
	case err := <-done:
		t.Fatalf("the edit went ahead while the lock was held: %v", err)
	default:
	}
	if err := filelock.Unlock(held); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the edit after the lock was released: %v", err)
	}
	if serverNames(t, path)["alpha"] {
		t.Fatal("alpha was not removed")
	}
}

// A save by another program after the edit read the file, seen at the last
// check, makes the edit start again on the saved text.
func TestEditRedoneWhenSavedBeforeTheCheck(t *testing.T) {
	path := writeFile(t, commented, 0o600)
	hookOnce(t, "check", func() { saveByRename(t, path, commented+extBlock) })
	if err := AddServer(path, ServerSpec{Name: "mine", Command: "x"}, false); err != nil {
		t.Fatal(err)
	}
	if names := serverNames(t, path); !names["ext"] || !names["mine"] {
		t.Fatalf("servers: %v\n%s", names, readFile(t, path))
	}
}

// A save by rename between the last check and the replace is seen in what
// the replace displaced, and kept: the edit is applied to it and written
// again.
func TestEditKeepsASaveMadeAsTheFileIsReplaced(t *testing.T) {
	path := writeFile(t, commented, 0o600)
	if !exchangeSupported(t, filepath.Dir(path)) {
		t.Skip("without an atomic exchange a save in this window is replaced unseen (documented)")
	}
	hookOnce(t, "rename", func() { saveByRename(t, path, commented+extBlock) })
	if err := RemoveServer(path, "alpha"); err != nil {
		t.Fatal(err)
	}
	if names := serverNames(t, path); !names["ext"] || names["alpha"] {
		t.Fatalf("servers: %v\n%s", names, readFile(t, path))
	}
	assertNoTempFiles(t, filepath.Dir(path))
}

// An append in place (`>>`) between the last check and the replace is kept
// too.
func TestEditKeepsAnAppendMadeAsTheFileIsReplaced(t *testing.T) {
	path := writeFile(t, commented, 0o600)
	if !keepReplacedOpen && !exchangeSupported(t, filepath.Dir(path)) {
		t.Skip("this system can neither exchange files nor read a file after renaming over it")
	}
	hookOnce(t, "rename", func() { appendInPlace(t, path, extBlock) })
	if err := AddServer(path, ServerSpec{Name: "mine", Command: "x"}, false); err != nil {
		t.Fatal(err)
	}
	if names := serverNames(t, path); !names["ext"] || !names["mine"] {
		t.Fatalf("servers: %v\n%s", names, readFile(t, path))
	}
}

// When the edit cannot be applied to the text another program saved as the
// file was replaced, that text is put back and the edit fails.
func TestEditPutsBackASaveItCannotApplyTo(t *testing.T) {
	path := writeFile(t, commented, 0o600)
	if !keepReplacedOpen && !exchangeSupported(t, filepath.Dir(path)) {
		t.Skip("this system can neither exchange files nor read a file after renaming over it")
	}
	saved := commented + "\n[servers.mine]\ncommand = \"theirs\"\n"
	hookOnce(t, "rename", func() {
		if err := os.WriteFile(path, []byte(saved), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	err := AddServer(path, ServerSpec{Name: "mine", Command: "x"}, false)
	if !errors.Is(err, ErrServerExists) {
		t.Fatalf("adding a name the other program added meanwhile = %v, want ErrServerExists", err)
	}
	if got := readFile(t, path); got != saved {
		t.Fatalf("the other program's text was not put back:\n%s", got)
	}
}

// A save after the write, from a program that read the file before it,
// removes the edit; the read-back sees that and the edit is made again.
func TestEditRedoneWhenReplacedAfterTheWrite(t *testing.T) {
	path := writeFile(t, commented, 0o600)
	hookOnce(t, "readback", func() { saveByRename(t, path, commented+extBlock) })
	if err := AddServer(path, ServerSpec{Name: "mine", Command: "x"}, false); err != nil {
		t.Fatal(err)
	}
	if names := serverNames(t, path); !names["ext"] || !names["mine"] {
		t.Fatalf("servers: %v\n%s", names, readFile(t, path))
	}
}

// A file that changes under every attempt makes the edit give up, with an
// error that says so, after a bounded number of attempts.
func TestEditGivesUpWhenTheFileKeepsChanging(t *testing.T) {
	path := writeFile(t, commented, 0o600)
	n := 0
	editHook = func(stage string) {
		if stage == "check" {
			n++
			saveByRename(t, path, commented+strings.Repeat("\n# changed again", n)+"\n")
		}
	}
	t.Cleanup(func() { editHook = nil })
	err := AddServer(path, ServerSpec{Name: "mine", Command: "x"}, false)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("during each of %d attempts", editAttempts)) {
		t.Fatalf("err = %v", err)
	}
	if n != editAttempts {
		t.Errorf("%d attempts, want %d", n, editAttempts)
	}
	if serverNames(t, path)["mine"] {
		t.Error("the failed edit is in the file")
	}
	assertNoTempFiles(t, filepath.Dir(path))
}

// Creating the registry takes the edit lock: edits racing the first
// command on a new machine neither fail nor lose the default text.
func TestEnsureExistsLockedWithConcurrentEdits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "hub.toml")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			if _, err := EnsureExistsLocked(path); err != nil {
				errs <- err
				return
			}
			errs <- AddServer(path, ServerSpec{Name: fmt.Sprintf("s%d", i), Command: "x"}, false)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	names := serverNames(t, path)
	if !names["demo"] || len(names) != 9 {
		t.Fatalf("servers: %v", names)
	}
	assertMode(t, path, 0o600)
	assertMode(t, lockPath(path), 0o600)
}

// Removing from a registry that does not exist fails and leaves no lock
// file behind.
func TestEditOfAMissingRegistryCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hub.toml")
	if err := RemoveServer(path, "x"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

// The lock file lies next to the registry, never on it.
func TestLockPath(t *testing.T) {
	if got, want := lockPath(filepath.Join("a", "b", "hub.toml")), filepath.Join("a", "b", ".hub.toml.lock"); got != want {
		t.Fatalf("lockPath = %q, want %q", got, want)
	}
}

// A save displaced by the replace, then a third save before it could be
// written back: the displaced text is kept aside and the edit fails,
// never exits as done with that text lost.
func TestEditKeepsAsideASaveItCouldNotWriteBack(t *testing.T) {
	path := writeFile(t, commented, 0o600)
	if !exchangeSupported(t, filepath.Dir(path)) {
		t.Skip("without an atomic exchange a save in this window is replaced unseen (documented)")
	}
	renamed := false
	third := commented + "\n[servers.third]\ncommand = \"x\"\n"
	editHook = func(stage string) {
		switch {
		case stage == "rename" && !renamed:
			renamed = true
			saveByRename(t, path, commented+extBlock)
		case stage == "check" && renamed && third != "":
			saveByRename(t, path, third)
			third = ""
		}
	}
	t.Cleanup(func() { editHook = nil })
	err := RemoveServer(path, "alpha")
	if err == nil || !strings.Contains(err.Error(), ".displaced") {
		t.Fatalf("RemoveServer = %v; want an error naming where the displaced text is", err)
	}
	kept, _ := filepath.Glob(path + ".displaced-*")
	if len(kept) != 1 {
		t.Fatalf("kept aside: %v, want one file", kept)
	}
	aside, rerr := os.ReadFile(kept[0])
	if rerr != nil || !strings.Contains(string(aside), "[servers.ext]") || !strings.Contains(err.Error(), kept[0]) {
		t.Fatalf("the displaced save was not kept aside, or the error %v does not name it: %v %q", err, rerr, aside)
	}
}
