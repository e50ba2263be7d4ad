package hub

// The catalog rebuilder: a change rebuilds only the server that changed,
// changes that come while a build runs share the next build, readers never
// wait for a build, and a hub that closes releases whoever waits for one.
// The merge of pieces is checked against the whole-catalog builder it
// replaced (FuzzCatalogMerge), and the benchmarks size a hub of thousands of
// servers.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcphub/mcphub/registry"
)

// listCounter is a fake upstream that counts the list reads a build makes.
type listCounter struct {
	*fakeUpstream
	lists atomic.Int64
}

func (c *listCounter) List(method string) []json.RawMessage {
	c.lists.Add(1)
	return c.fakeUpstream.List(method)
}

// gatedDiff wraps a hub's onDiff: once armed, the next build that reports a
// change of the merged view stops there until released, so a test can act
// while a build is in progress. It counts the merged view's reports.
type gatedDiff struct {
	next    func(endpoint string, old, new *catalog)
	merged  atomic.Int64
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}

	mu        sync.Mutex
	endpoints []string // every endpoint reported since the last take
}

func (g *gatedDiff) diff(endpoint string, old, new *catalog) {
	g.mu.Lock()
	g.endpoints = append(g.endpoints, endpoint)
	g.mu.Unlock()
	if endpoint == "" {
		g.merged.Add(1)
		if g.armed.CompareAndSwap(true, false) {
			close(g.entered)
			<-g.release
		}
	}
	g.next(endpoint, old, new)
}

// take returns the endpoints reported since the last take, sorted, the
// first few of them only when there are many.
func (g *gatedDiff) take() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.endpoints
	g.endpoints = nil
	slices.Sort(out)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("… (%d views)", len(out)))
	}
	return out
}

// rebuildHub is a hub over n servers s000… whose upstreams count list
// reads, with its onDiff gated.
type rebuildHub struct {
	h     *Hub
	ups   map[string]*listCounter
	names []string
	gate  *gatedDiff
}

func startRebuildHub(t testing.TB, n int) *rebuildHub {
	t.Helper()
	var text strings.Builder
	rh := &rebuildHub{ups: map[string]*listCounter{}}
	for i := range n {
		name := fmt.Sprintf("s%03d", i)
		fmt.Fprintf(&text, "[servers.%s]\ncommand = \"x\"\n", name)
		rh.names = append(rh.names, name)
		rh.ups[name] = &listCounter{fakeUpstream: newFake(name).setList("tools/list", toolItems("t1", "t2"))}
	}
	rh.h = New(Options{Registry: parseRegistry(t, text.String()), Logger: slog.New(slog.DiscardHandler), ListChangedDelay: time.Hour,
		NewUpstream: func(spec *registry.Server, _ registry.Hub, events UpstreamEvents) Upstream {
			u := rh.ups[spec.Name]
			u.mu.Lock()
			u.events = events
			u.mu.Unlock()
			return u
		}})
	rh.gate = &gatedDiff{next: rh.h.servers.onDiff, entered: make(chan struct{}), release: make(chan struct{})}
	rh.h.servers.onDiff = rh.gate.diff
	if err := rh.h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rh.h.Close() })
	// The warm-up ends with a build that reads every server once more;
	// the tests count what a change reads after it.
	rh.h.servers.warmed(context.Background())
	rh.gate.take()
	return rh
}

// resetCounts zeroes every upstream's list reads.
func (rh *rebuildHub) resetCounts() {
	for _, u := range rh.ups {
		u.lists.Store(0)
	}
}

// readers lists the servers whose lists were read, with how often.
func (rh *rebuildHub) readers() reads {
	out := reads{}
	for name, u := range rh.ups {
		if n := u.lists.Load(); n > 0 {
			out[name] = n
		}
	}
	return out
}

// reads counts list reads by server; it prints the first few only.
type reads map[string]int64

func (r reads) String() string {
	names := slices.Sorted(maps.Keys(r))
	var parts []string
	for _, n := range names[:min(len(names), 5)] {
		parts = append(parts, fmt.Sprintf("%s:%d", n, r[n]))
	}
	if len(names) > 5 {
		parts = append(parts, fmt.Sprintf("… (%d servers)", len(names)))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// hold starts a change of s000's tools whose build stops in onDiff, and
// returns once it has; the change's changed() call returns on done.
func (rh *rebuildHub) hold(t *testing.T) (done chan struct{}) {
	t.Helper()
	rh.gate.armed.Store(true)
	done = make(chan struct{})
	go func() {
		defer close(done)
		rh.ups["s000"].setList("tools/list", toolItems("held")).changed()
	}()
	select {
	case <-rh.gate.entered:
	case <-time.After(waitFor):
		t.Fatal("the build of the held change never reported it")
	}
	return done
}

// TestChangedRebuildsOnlyThatServer: a change of one server among hundreds
// reads only that server's lists, reports only the merged view and that
// server's own, and is in both views when changed returns. A change that
// alters no list publishes nothing.
func TestChangedRebuildsOnlyThatServer(t *testing.T) {
	rh := startRebuildHub(t, 300)
	rh.resetCounts()
	rh.ups["s150"].setList("tools/list", toolItems("t1", "t2", "t3")).changed()
	if got := rh.readers(); len(got) != 1 || got["s150"] != int64(len(listKinds)) {
		t.Errorf("list reads after one server's change = %v, want only s150's %d lists", got, len(listKinds))
	}
	if got := rh.gate.take(); !slices.Equal(got, []string{"", "s150"}) {
		t.Errorf("views reported = %q, want the merged one and s150's", got)
	}
	if _, ok := rh.h.servers.view("").tool("s150__t3"); !ok {
		t.Error("the merged view lacks s150__t3 once changed returned")
	}
	if _, ok := rh.h.servers.view("s150").tool("t3"); !ok {
		t.Error("s150's own view lacks t3 once changed returned")
	}
	if _, ok := rh.h.servers.view("").tool("s149__t2"); !ok {
		t.Error("the merged view lost another server's tool")
	}

	before := rh.h.servers.view("")
	rh.ups["s007"].changed() // a state change: the lists are as they were
	if got := rh.gate.take(); len(got) != 0 {
		t.Errorf("a change that altered no list reported %q", got)
	}
	if rh.h.servers.view("") != before {
		t.Error("a change that altered no list published a new merged view")
	}
}

// TestChangesCoalesced: while a build runs, changes of many servers wait
// for the next build, which takes them all at once.
func TestChangesCoalesced(t *testing.T) {
	rh := startRebuildHub(t, 60)
	held := rh.hold(t)
	rh.resetCounts()
	var wg sync.WaitGroup
	for _, name := range rh.names[1:] {
		wg.Go(func() { rh.ups[name].setList("tools/list", toolItems("new")).changed() })
	}
	marked := func() int {
		q := &rh.h.servers.queue
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.dirty)
	}
	// Nothing signals that a change was marked; the queue is polled.
	eventually(t, "every change is marked while the build is held", func() bool { return marked() == len(rh.names)-1 })
	mergedBefore := rh.gate.merged.Load()
	close(rh.gate.release)
	wg.Wait()
	<-held
	if n := rh.gate.merged.Load() - mergedBefore; n != 1 {
		t.Errorf("%d changes took %d more builds of the merged view, want 1", len(rh.names)-1, n)
	}
	reads := rh.readers()
	for _, name := range rh.names[1:] {
		if reads[name] != int64(len(listKinds)) {
			t.Errorf("%s's lists were read %d times, want once each", name, reads[name])
		}
		if _, ok := rh.h.servers.view("").tool(name + "__new"); !ok {
			t.Errorf("the merged view lacks %s__new", name)
		}
	}
}

// TestReadersDoNotWaitForABuild: while a build is held, the views, the
// entries, the registry and the status answer at once, from the last
// published build.
func TestReadersDoNotWaitForABuild(t *testing.T) {
	rh := startRebuildHub(t, 20)
	held := rh.hold(t)
	defer func() {
		close(rh.gate.release)
		<-held
	}()
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		ss := rh.h.servers
		if _, ok := ss.view("").tool("s000__held"); ok {
			t.Error("the merged view shows a change whose build is not published")
		}
		if _, ok := ss.view("").tool("s000__t1"); !ok {
			t.Error("the merged view lost the published s000__t1")
		}
		if ss.view("s001") == nil || ss.get("s001") == nil || ss.registry() == nil || len(ss.sorted()) != 20 {
			t.Error("a reader got nothing while a build was held")
		}
		rh.h.Status()
		rh.h.fanout.applyLevels()
	}()
	select {
	case <-answered:
	case <-time.After(waitFor):
		t.Fatal("readers waited for a held build")
	}
}

// TestChangedReturnsWhenClosing: a change waiting for its build returns
// once the hub closes, without the build.
func TestChangedReturnsWhenClosing(t *testing.T) {
	rh := startRebuildHub(t, 5)
	held := rh.hold(t)
	waiting := make(chan struct{})
	go func() {
		defer close(waiting)
		rh.ups["s003"].setList("tools/list", toolItems("late")).changed()
	}()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		rh.h.Close()
	}()
	for what, ch := range map[string]chan struct{}{"the held change": held, "the waiting change": waiting} {
		select {
		case <-ch:
		case <-time.After(waitFor):
			t.Fatalf("%s did not return once the hub closed", what)
		}
	}
	close(rh.gate.release)
	select {
	case <-closed:
	case <-time.After(waitFor):
		t.Fatal("Close did not return once the build was released")
	}
}

// TestApplyRebuildsWhatChanged: a registry change that alters one
// server's catalog settings rebuilds that server's pieces only, and one
// that alters nothing of any catalog reads no list at all.
func TestApplyRebuildsWhatChanged(t *testing.T) {
	rh := startRebuildHub(t, 50)
	text := rh.h.servers.registry()
	var b strings.Builder
	for _, s := range text.Servers {
		fmt.Fprintf(&b, "[servers.%s]\ncommand = \"x\"\n", s.Name)
		if s.Name == "s010" {
			b.WriteString("prefix = \"ten\"\n")
		}
	}
	rh.resetCounts()
	rh.h.Apply(parseRegistry(t, b.String()))
	if got := rh.readers(); len(got) != 1 || got["s010"] == 0 {
		t.Errorf("list reads after a prefix change of s010 = %v, want s010's only", got)
	}
	if _, ok := rh.h.servers.view("").tool("ten__t1"); !ok {
		t.Error("the merged view lacks ten__t1 after the prefix change")
	}
	rh.resetCounts()
	rh.h.Apply(parseRegistry(t, b.String()+"\n"))
	if got := rh.readers(); len(got) != 0 {
		t.Errorf("list reads after an apply that changed no catalog = %v, want none", got)
	}
}

// BenchmarkMergePieces merges the views of 1,000 and 10,000 servers with
// ten tools, a prompt and a resource each (the resource offered by all,
// so every server but the first reports it hidden).
func BenchmarkMergePieces(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		pieces := make([]*piece, n)
		for i := range pieces {
			f := newFake("x").setList("tools/list", toolItems("t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10")).
				setList("prompts/list", items(`{"name":"p"}`)).setList("resources/list", items(`{"uri":"x://1","name":"x"}`))
			name := fmt.Sprintf("s%05d", i)
			pieces[i] = newPiece(&registry.Server{Name: name, Prefix: name, Enabled: true}, listsOf(f), shaping{prefix: name, sep: "__"})
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				mergePieces(pieces)
			}
		})
	}
}

// BenchmarkStatus reports the state of 10,000 servers.
func BenchmarkStatus(b *testing.B) {
	rh := startRebuildHub(b, 10000)
	for b.Loop() {
		rh.h.Status()
	}
}
