package main

// The edit soak runs many `mcphub add` processes against one registry at
// once, with a few `mcphub remove`s of servers the file had from the start
// and an outside editor appending servers of its own in between, and then
// compares the servers in hub.toml with the set every exit status promised:
// a command that exited 0 has its change on disk, and nothing else changed.
//
// TestSoakEdits runs by default with 40 adds; the full soak, 160 adds, runs
// only when asked:
//
//	MCPHUB_SOAK=1 go test -run 'TestSoakEdits$' -count=1 -v ./cmd/mcphub/
//
// Every identifier here starts with "soakEdit".

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcphub/mcphub/internal/filelock"
	"github.com/mcphub/mcphub/registry"
)

// soakEditsParallel bounds how many mcphub processes run at once.
const soakEditsParallel = 48

func TestSoakEdits(t *testing.T) {
	n := 40
	if os.Getenv("MCPHUB_SOAK") == "1" {
		n = 160
	}
	missing, extra := soakEdits(t, n)
	if len(missing)+len(extra) > 0 {
		t.Errorf("hub.toml differs from the expected set: missing %v, unexpected %v", missing, extra)
	}
}

// TestSoakEditsOnANewMachine runs concurrent first commands on a machine
// without a registry: one of them creates it from the default, under the
// edit lock, and every add lands in it with the default text kept.
func TestSoakEditsOnANewMachine(t *testing.T) {
	bin := mcphubBinary(t)
	home := t.TempDir()
	cfg := filepath.Join(home, "config", "mcphub", "hub.toml")
	env := soakEditsEnv(home, cfg)
	ops := soakEditsOps(12, 0)
	var wg sync.WaitGroup
	for i := range ops {
		wg.Go(func() { ops[i].run(bin, env, home) })
	}
	wg.Wait()
	created := 0
	for _, op := range ops {
		if op.code != 0 {
			t.Errorf("mcphub add %s exited %d:\n%s", op.name, op.code, op.out)
		}
		if strings.Contains(op.out, "created a new registry") {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d commands say they created the registry, want 1", created)
	}
	got := soakEditsServers(t, cfg)
	for _, op := range ops {
		if !got[op.name] {
			t.Errorf("%s is missing from hub.toml", op.name)
		}
	}
	if !got["demo"] || len(got) != len(ops)+1 {
		t.Errorf("hub.toml has %d servers, want the default's demo and the %d added: %v", len(got), len(ops), got)
	}
}

// soakEditOp is one mcphub command of the soak and how it ended.
type soakEditOp struct {
	name string // the server it adds or removes
	add  bool
	code int // exit status; -1 when it could not run
	out  string
	took time.Duration
}

// soakEdits runs n concurrent `mcphub add NAME -- echo NAME` processes
// against one new registry, with concurrent `mcphub remove`s of servers the
// registry had from the start and an outside editor (which takes no lock)
// appending its own servers meanwhile, and returns the servers missing from
// hub.toml and those it holds unexpectedly. A command that fails is a test
// error of its own; its server is then not expected.
func soakEdits(t *testing.T, n int) (missing, extra []string) {
	t.Helper()
	bin := mcphubBinary(t)
	home := t.TempDir()
	cfg := filepath.Join(home, "config", "hub.toml")
	env := soakEditsEnv(home, cfg)
	removes, outside := max(2, n/10), max(3, n/8)
	if err := soakEditsInitial(cfg, removes); err != nil {
		t.Fatal(err)
	}

	ops := soakEditsOps(n, removes)
	done := make(chan int, len(ops))
	sem := make(chan struct{}, soakEditsParallel)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range ops {
		wg.Go(func() {
			sem <- struct{}{}
			ops[i].run(bin, env, home)
			<-sem
			done <- i
		})
	}
	ed := soakEditsOutside(cfg, outside, len(ops), done)
	wg.Wait()
	elapsed := time.Since(start)
	if ed.err != nil {
		t.Errorf("the outside editor: %v", ed.err)
	}

	expected, failed := soakEditsExpected(t, ops, removes, ed)
	var took []time.Duration
	for _, op := range ops {
		took = append(took, op.took)
	}
	// What the outside editor's own saves replaced is its doing, not
	// mcphub's: such a server may be missing (or back), unless the edit
	// that made it saw the loss in its read-back and made it again.
	excused := map[string]bool{}
	for _, name := range append(ed.dropped, ed.revived...) {
		excused[name] = true
	}
	got := soakEditsServers(t, cfg)
	for name := range expected {
		if !got[name] && !excused[name] {
			missing = append(missing, name)
		}
	}
	for name := range got {
		if !expected[name] && !excused[name] {
			extra = append(extra, name)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	slices.Sort(took)
	t.Logf("%d adds and %d removes (%d at a time) and %d outside appends in %v: %d failed; per command median %v, slowest %v; hub.toml: %d servers, %d missing %v, %d unexpected %v",
		n, removes, soakEditsParallel, len(ed.appended), elapsed.Round(time.Millisecond), failed,
		took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), len(got), len(missing), missing, len(extra), extra)
	if len(ed.dropped)+len(ed.revived) > 0 {
		redone := 0
		for _, name := range ed.dropped {
			if got[name] {
				redone++
			}
		}
		t.Logf("the outside editor's own saves replaced saves made after its check: it dropped %v (%d of them made again by the mcphub that saw the loss in its read-back) and brought back %v (not counted as missing or unexpected)",
			ed.dropped, redone, ed.revived)
	}
	return missing, extra
}

// soakEditsExpected is the set of servers hub.toml must hold after the
// soak: the pre-existing ones less those removed, every server added with
// exit status 0 and every outside append. A command that failed is a test
// error, and counted.
func soakEditsExpected(t *testing.T, ops []soakEditOp, removes int, ed *soakEditsEditor) (map[string]bool, int) {
	t.Helper()
	expected := map[string]bool{}
	for i := range removes {
		expected[fmt.Sprintf("pre-%d", i)] = true
	}
	for _, name := range ed.appended {
		expected[name] = true
	}
	failed := 0
	for _, op := range ops {
		switch {
		case op.code != 0:
			failed++
			t.Errorf("mcphub %s %s exited %d:\n%s", map[bool]string{true: "add", false: "remove"}[op.add], op.name, op.code, op.out)
		case op.add:
			expected[op.name] = true
		default:
			delete(expected, op.name)
		}
	}
	return expected, failed
}

// soakEditsEnv is the environment of every command: this one without
// mcphub's own variables and the user's directories, with a private home
// and the registry at cfg.
func soakEditsEnv(home, cfg string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "MCPHUB_") || strings.HasPrefix(k, "XDG_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_DATA_HOME="+filepath.Join(home, "share"), "MCPHUB_CONFIG="+cfg, "MCPHUB_DATA="+filepath.Join(home, "data"))
}

// soakEditsInitial writes the registry the soak starts from: a hub on a
// port nothing listens on, and the servers pre-0 ... pre-(removes-1) that
// the soak removes.
func soakEditsInitial(cfg string, removes int) error {
	var b strings.Builder
	b.WriteString("# The edit soak's registry.\n[hub]\nlisten = \"127.0.0.1:1\"\n")
	for i := range removes {
		fmt.Fprintf(&b, "\n# pre-%d is removed by the soak.\n[servers.pre-%d]\ncommand = \"echo\"\nargs = [\"pre-%d\"]\n", i, i, i)
	}
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		return err
	}
	return os.WriteFile(cfg, []byte(b.String()), 0o600)
}

// soakEditsOps is n adds with the removes spread among them.
func soakEditsOps(n, removes int) []soakEditOp {
	var ops []soakEditOp
	every := max(1, n/max(1, removes))
	for i := range n {
		ops = append(ops, soakEditOp{name: fmt.Sprintf("add-%d", i), add: true})
		if r := i / every; i%every == 0 && r < removes {
			ops = append(ops, soakEditOp{name: fmt.Sprintf("pre-%d", r)})
		}
	}
	return ops
}

// run runs the command as its own process, which CommandContext stops by
// its PID should it hang.
func (op *soakEditOp) run(bin string, env []string, dir string) {
	args := []string{"remove", op.name}
	if op.add {
		args = []string{"add", op.name, "--", "echo", op.name}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Dir = env, dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	op.took, op.out = time.Since(start), string(out)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		op.code = ee.ExitCode()
	default:
		op.code, op.out = -1, err.Error()
	}
}

// soakEditsEditor is the outside editor and what it did.
type soakEditsEditor struct {
	cfg      string
	appended []string
	// dropped and revived are the servers the editor's own saves removed
	// or brought back: saves by others that landed between its check and
	// its replace, which it replaced. No program that edits without the
	// lock can avoid that; the soak does not count them against mcphub
	// (whose read-back makes such an edit again when it sees the loss).
	dropped, revived []string
	err              error
}

// soakEditsOutside runs the outside editor: it appends the servers ext-0
// ... ext-(count-1), spread over the run (one each time another share of
// the total commands has finished), and returns once every command has
// finished.
func soakEditsOutside(cfg string, count, total int, done <-chan int) *soakEditsEditor {
	ed := &soakEditsEditor{cfg: cfg}
	next := 0
	add := func() {
		name := fmt.Sprintf("ext-%d", next)
		next++
		if err := ed.append(name); err != nil {
			if ed.err == nil {
				ed.err = err
			}
			return
		}
		ed.appended = append(ed.appended, name)
	}
	for finished := 1; finished <= total; finished++ {
		<-done
		if next < count && finished*(count+1) >= (next+1)*total {
			add()
		}
	}
	for next < count {
		add()
	}
	return ed
}

// append appends a server the way an editor saves, without the edit lock:
// read the file, write the new text to a temporary file, check (as editors
// do before they overwrite a file) that the file still holds what was read,
// else start again, and put the new file in place. Where the system can, it
// puts it in place with an atomic exchange, which shows what it replaced:
// when that is not what it read, another save landed after the check, and
// the servers the editor thereby dropped or brought back are recorded.
func (ed *soakEditsEditor) append(name string) error {
	for range 100 {
		old, err := os.ReadFile(ed.cfg)
		if err != nil {
			return err
		}
		text := append(bytes.Clone(old), fmt.Sprintf("\n[servers.%s]\ncommand = \"echo\"\nargs = [%q]\n", name, name)...)
		tmp, err := os.CreateTemp(filepath.Dir(ed.cfg), ".outside-editor-*")
		if err != nil {
			return err
		}
		_, err = tmp.Write(text)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(tmp.Name())
			return err
		}
		if cur, err := os.ReadFile(ed.cfg); err != nil || !bytes.Equal(cur, old) {
			os.Remove(tmp.Name())
			continue
		}
		return ed.replace(tmp.Name(), old, text)
	}
	return fmt.Errorf("appending %s: the file changed under every one of 100 attempts", name)
}

// replace puts tmp in place of the registry, which held old at the check,
// and records what that dropped or brought back of a save made since.
func (ed *soakEditsEditor) replace(tmp string, old, text []byte) error {
	defer os.Remove(tmp)
	err := filelock.Exchange(tmp, ed.cfg)
	if errors.Is(err, filelock.ErrExchangeUnsupported) {
		return os.Rename(tmp, ed.cfg)
	}
	if err != nil {
		return err
	}
	was, err := os.ReadFile(tmp)
	if err != nil || bytes.Equal(was, old) {
		return err
	}
	before, after := soakEditsNames(ed.cfg, was), soakEditsNames(ed.cfg, text)
	for name := range before {
		if !after[name] {
			ed.dropped = append(ed.dropped, name)
		}
	}
	for name := range after {
		if !before[name] && !strings.HasPrefix(name, "ext-") {
			ed.revived = append(ed.revived, name)
		}
	}
	return nil
}

// soakEditsNames returns the names of the servers in a registry text, none
// when it does not parse.
func soakEditsNames(path string, text []byte) map[string]bool {
	names := map[string]bool{}
	if reg, _ := registry.Parse(path, text, os.LookupEnv); reg != nil {
		for _, s := range reg.Servers {
			names[s.Name] = true
		}
	}
	return names
}

// soakEditsServers returns the names of the servers in the registry at cfg.
func soakEditsServers(t *testing.T, cfg string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Parse(cfg, data, os.LookupEnv)
	if reg == nil {
		t.Fatalf("hub.toml does not parse after the soak: %v\n%s", err, data)
	}
	if err != nil {
		t.Errorf("hub.toml has problems after the soak: %v", err)
	}
	got := map[string]bool{}
	for _, s := range reg.Servers {
		got[s.Name] = true
	}
	return got
}

// TestSoakEditsNoRegistryListAndStatus checks the commands that only look:
// on a machine without a registry, list and status say so and leave it
// without one (no registry, no lock file, no directory), and status still
// finds a running hub through the data directory. The outputs are golden
// files, compared and rewritten (-update) as TestGoldenCLI's are.
func TestSoakEditsNoRegistryListAndStatus(t *testing.T) {
	cases := []struct {
		goldenCase
		golden bool
	}{
		{goldenCase{name: "list-no-registry", args: []string{"list"}}, true},
		{goldenCase{name: "list-no-registry-json", args: []string{"list", "--json"}}, true},
		{goldenCase{name: "status-no-registry-running-hub", args: []string{"status"}, setup: func(t *testing.T, e *goldenEnv) {
			e.serveHub(t, goldenHubStatus)
		}}, true},
		// No golden file: without a registry status asks the default
		// address, where a hub of this machine may be listening.
		{goldenCase{name: "status-no-registry", args: []string{"status"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := goldenNewEnv(t)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			got := goldenRun(e, tc.args)
			if _, err := os.Stat(filepath.Dir(e.config)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("mcphub %s created %s (or could not tell: %v)", strings.Join(tc.args, " "), filepath.Dir(e.config), err)
			}
			if tc.golden {
				goldenCheck(t, tc.name, got)
				return
			}
			noHub := "$ mcphub status\n-- exit status --\n1\n-- stdout --\nno mcphub is running at 127.0.0.1:7733"
			if !strings.HasPrefix(got, noHub) {
				t.Logf("a hub of this machine answers at the default address:\n%s", got)
			} else if !strings.Contains(got, "there is no registry at $TMP/home/.config/mcphub/hub.toml yet") {
				t.Errorf("status without a registry and without a hub does not say how to create one:\n%s", got)
			}
		})
	}
}
