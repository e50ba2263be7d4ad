package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The team benchmark (-team): one hub on SQLite, one on PostgreSQL, and
// three replicas on one PostgreSQL store behind a round-robin balancer,
// measured side by side in one run, with the PostgreSQL round trips each
// kind of call costs. It is reported, never judged against a target.
//
// PostgreSQL comes from MCPHUB_TEST_POSTGRES, else from scripts/postgres
// url (the throwaway cluster of the checkout). Each store is a fresh schema
// in that database, dropped at the end.
//
// Round trips are counted on the wire: the hubs of the counting phase
// reach PostgreSQL through a relay in this process that reads the
// protocol's framing and counts each ReadyForQuery the server sends (one
// per simple Query or extended-protocol Sync: one wait of the client for
// the server), each statement executed, and each BEGIN. Those hubs are
// started for the counting alone, so that the relay costs the measured
// hubs nothing.

// teamTarget is one of the three setups the team benchmark compares.
type teamTarget struct {
	name string
	url  string // the MCP endpoint the client calls
}

const (
	teamSQLite = "SQLite, 1 replica"
	teamPG     = "PostgreSQL, 1 replica"
	teamPGLB   = "PostgreSQL, 1 replica + balancer"
	teamThree  = "PostgreSQL, 3 replicas + balancer"
)

// teamRun is the team benchmark's processes, stores and results.
type teamRun struct {
	b       *bench
	base    string   // the PostgreSQL URL the schemas are made in
	schemas []string // to drop at the end
	reg     string   // the registry every hub serves: the upstream over HTTP

	rows   []callRow
	counts []countRow
}

// countRow is one workload's store round trips through one setup.
type countRow struct {
	workload, target string
	calls            int
	per              pgCounts // per call, idle background taken off
	answered         string   // how the hub answered the calls' POSTs
	err              error
}

// runTeam runs the team benchmark and prints its report.
func runTeam(mcphub string, d time.Duration, rounds, calls int) error {
	// The setups choose their stores themselves.
	for _, v := range []string{"MCPHUB_STORE", "MCPHUB_REPLICA", "MCPHUB_ADVERTISE"} {
		os.Unsetenv(v)
	}
	base, err := postgresURL()
	if err != nil {
		return err
	}
	b, cleanup, err := newBench("mcphub-bench-team-", mcphub)
	if err != nil {
		return err
	}
	defer cleanup()
	tr := &teamRun{b: b, base: base}
	// The processes stop before their schemas go.
	defer tr.dropSchemas()
	defer tr.b.stop()

	if err := tr.startUpstream(); err != nil {
		return err
	}
	targets, err := tr.startSetups("", nil)
	if err != nil {
		return err
	}
	if err := tr.measureCalls(targets, d, rounds); err != nil {
		return err
	}
	if err := tr.measureRoundTrips(calls); err != nil {
		return err
	}
	tr.print(os.Stdout, d, rounds)
	return nil
}

// postgresURL is MCPHUB_TEST_POSTGRES, else what scripts/postgres url
// prints.
func postgresURL() (string, error) {
	if u := os.Getenv("MCPHUB_TEST_POSTGRES"); u != "" {
		return u, nil
	}
	out, err := exec.Command("scripts/postgres", "url").Output()
	if err != nil {
		return "", errors.New("-team needs PostgreSQL: set MCPHUB_TEST_POSTGRES, or run from the repository root with scripts/postgres start done")
	}
	return strings.TrimSpace(string(out)), nil
}

// newSchema makes a fresh schema in the base database and returns its
// name, to be dropped at the end.
func (tr *teamRun) newSchema() (string, error) {
	var b [6]byte
	rand.Read(b[:])
	schema := "bench_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, tr.base)
	if err != nil {
		return "", fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", fmt.Errorf("create schema: %w", err)
	}
	tr.schemas = append(tr.schemas, schema)
	return schema, nil
}

func (tr *teamRun) dropSchemas() {
	if len(tr.schemas) == 0 {
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, tr.base)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcphub-bench: could not drop schemas %v: %v\n", tr.schemas, err)
		return
	}
	defer conn.Close(ctx)
	for _, s := range tr.schemas {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+s+" CASCADE"); err != nil {
			fmt.Fprintf(os.Stderr, "mcphub-bench: could not drop schema %s: %v\n", s, err)
		}
	}
}

// storeURL is the base URL on schema, reached at hostport when it is not
// empty (a counting relay).
func (tr *teamRun) storeURL(schema, hostport string) (string, error) {
	u, err := url.Parse(tr.base)
	if err != nil {
		return "", errors.New("the PostgreSQL URL does not parse")
	}
	if hostport != "" {
		u.Host = hostport
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// pgAddr is the host:port of the base URL, for the counting relays.
func (tr *teamRun) pgAddr() (string, error) {
	u, err := url.Parse(tr.base)
	if err != nil || u.Hostname() == "" || u.Query().Get("host") != "" {
		return "", errors.New("counting round trips needs a PostgreSQL URL naming a TCP host (postgres://user@host:port/db)")
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "5432"), nil
	}
	return u.Host, nil
}

// startUpstream starts the reference upstream over HTTP.
func (tr *teamRun) startUpstream() error {
	b := tr.b
	addr, err := freePort()
	if err != nil {
		return err
	}
	up, err := start("upstream", io.Discard, b.self, "upstream", "-http", addr)
	if err != nil {
		return err
	}
	b.procs = append(b.procs, up)
	b.direct = "http://" + addr + "/mcp"
	tr.reg = fmt.Sprintf("[servers.http]\nurl = %q\ntransport = \"streamable-http\"\nprefix = \"\"\n", b.direct)
	return waitHTTP(b.direct, 10*time.Second)
}

// startSetups starts the three setups. tag names their directories; relay,
// when set, returns the address a replica reaches PostgreSQL at (a counter
// of its own), and the SQLite hub is then left out. The processes are
// stopped with the run; stop stops these ones earlier.
func (tr *teamRun) startSetups(tag string, relay func(replica string) (string, error)) (targets []teamTarget, err error) {
	b := tr.b
	dir := func(name string) string { return filepath.Join(b.work, tag+name) }
	hub := func(name string, extra ...string) (string, error) {
		p, addr, _, err := startHub(b.mcphub, dir(name), tr.reg, 1, extra...)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		b.procs = append(b.procs, p)
		return addr, nil
	}
	store := func(schema, replica string) (string, error) {
		hostport := ""
		if relay != nil {
			if hostport, err = relay(replica); err != nil {
				return "", err
			}
		}
		return tr.storeURL(schema, hostport)
	}

	if relay == nil {
		addr, err := hub("sqlite")
		if err != nil {
			return nil, err
		}
		targets = append(targets, teamTarget{teamSQLite, "http://" + addr + "/mcp"})
	}

	schema, err := tr.newSchema()
	if err != nil {
		return nil, err
	}
	u, err := store(schema, "solo")
	if err != nil {
		return nil, err
	}
	addr, err := hub("solo", "--store", u, "--replica", "solo")
	if err != nil {
		return nil, err
	}
	targets = append(targets, teamTarget{teamPG, "http://" + addr + "/mcp"})
	if relay == nil {
		// The balancer's hop alone, for comparison with three replicas.
		lb, err := tr.startBalancer([]string{addr})
		if err != nil {
			return nil, err
		}
		targets = append(targets, teamTarget{teamPGLB, lb})
	}

	if schema, err = tr.newSchema(); err != nil {
		return nil, err
	}
	var addrs []string
	for i := range 3 {
		name := fmt.Sprintf("r%d", i)
		if u, err = store(schema, name); err != nil {
			return nil, err
		}
		addr, err := hub(name, "--store", u, "--replica", name)
		if err != nil {
			return nil, err
		}
		addrs = append(addrs, addr)
	}
	for _, a := range addrs {
		if err := waitReplicas(a, 3, 30*time.Second); err != nil {
			return nil, err
		}
	}
	lb, err := tr.startBalancer(addrs)
	if err != nil {
		return nil, err
	}
	targets = append(targets, teamTarget{teamThree, lb})
	return targets, nil
}

// startBalancer starts this binary's "balance" mode in front of the hubs
// at addrs and returns its MCP endpoint.
func (tr *teamRun) startBalancer(addrs []string) (string, error) {
	addr, err := freePort()
	if err != nil {
		return "", err
	}
	logf, err := os.Create(filepath.Join(tr.b.work, "balancer-"+addr[strings.LastIndex(addr, ":")+1:]+".log"))
	if err != nil {
		return "", err
	}
	defer logf.Close()
	lb, err := start("balancer", logf, tr.b.self, "balance", "-listen", addr, "-to", strings.Join(addrs, ","))
	if err != nil {
		return "", err
	}
	tr.b.procs = append(tr.b.procs, lb)
	if err := waitHTTP("http://"+addr+"/readyz", 10*time.Second); err != nil {
		return "", err
	}
	return "http://" + addr + "/mcp", nil
}

// waitReplicas polls a replica's /readyz until it sees n live replicas.
func waitReplicas(addr string, n int, limit time.Duration) error {
	start := time.Now()
	for time.Since(start) < limit {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			var st struct {
				Cluster *struct {
					Replicas []struct{ Alive bool } `json:"replicas"`
				} `json:"cluster"`
			}
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			alive := 0
			if st.Cluster != nil {
				for _, r := range st.Cluster.Replicas {
					if r.Alive {
						alive++
					}
				}
			}
			if alive == n {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s: does not see %d live replicas within %s", addr, n, limit)
}

// serveBalancer serves ln as a round-robin balancer over the replicas at
// targets (host:port each), with no stickiness: each request goes to the
// next replica in turn. This binary's "balance" mode.
func serveBalancer(ln net.Listener, targets []string) error {
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	var proxies []*httputil.ReverseProxy
	for _, t := range targets {
		u, err := url.Parse("http://" + t)
		if err != nil {
			return err
		}
		proxies = append(proxies, &httputil.ReverseProxy{
			Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
			Transport:     transport,
			FlushInterval: -1, // streams pass event by event
		})
	}
	if len(proxies) == 0 {
		return errors.New("balance: no targets")
	}
	var next atomic.Uint64
	return (&http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A replica may answer before the proxy's transport has read the
		// request body's end; without this the server would close that
		// body as the answer's head goes out, and the transport, failing
		// to read it, would drop the connection the answer streams on.
		http.NewResponseController(w).EnableFullDuplex()
		proxies[(next.Add(1)-1)%uint64(len(proxies))].ServeHTTP(w, r)
	})}).Serve(ln)
}

// measureCalls runs the single-caller and 32-caller load phases against
// the three setups, rounds alternating their order.
func (tr *teamRun) measureCalls(targets []teamTarget, d time.Duration, rounds int) error {
	fmt.Fprintf(os.Stderr, "team: measuring calls (%d rounds of %s per phase)...\n", rounds, d)
	for _, shape := range []struct {
		name              string
		sessions, callers int
	}{{"1 caller", 1, 1}, {"4 sessions x 8 callers", 4, 8}} {
		first := len(tr.rows)
		for _, t := range targets {
			tr.rows = append(tr.rows, callRow{shape: shape.name, target: t.name})
		}
		for round := range rounds {
			for i := range targets {
				j := i
				if round%2 == 1 {
					j = len(targets) - 1 - i
				}
				r, err := callLoad(targets[j].url, "echo", shape.sessions, shape.callers, d)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", targets[j].name, shape.name, err)
				}
				row := &tr.rows[first+j]
				row.r = row.r.add(r)
			}
		}
	}
	return nil
}

// pgCounts is what a counting relay saw, or a per-call share of it.
type pgCounts struct {
	conns      float64 // connections opened
	roundTrips float64 // ReadyForQuery messages, those ending a connection's startup not included
	statements float64 // statements executed, BEGIN, COMMIT and ROLLBACK not included
	begins     float64 // explicit transactions
}

func (c pgCounts) minus(o pgCounts) pgCounts {
	return pgCounts{c.conns - o.conns, c.roundTrips - o.roundTrips, c.statements - o.statements, c.begins - o.begins}
}

func (c pgCounts) times(f float64) pgCounts {
	return pgCounts{c.conns * f, c.roundTrips * f, c.statements * f, c.begins * f}
}

// pgCounter is a relay in front of PostgreSQL that counts what passes.
type pgCounter struct {
	ln                                  net.Listener
	to                                  string
	conns, roundTrips, statements, begs atomic.Int64
}

func newPGCounter(to string) (*pgCounter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &pgCounter{ln: ln, to: to}
	go c.serve()
	return c, nil
}

func (c *pgCounter) read() pgCounts {
	return pgCounts{float64(c.conns.Load()), float64(c.roundTrips.Load()), float64(c.statements.Load()), float64(c.begs.Load())}
}

func (c *pgCounter) serve() {
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			up, err := net.Dial("tcp", c.to)
			if err != nil {
				return
			}
			defer up.Close()
			cr := bufio.NewReader(conn)
			startup, err := c.startup(conn, cr)
			if err != nil {
				return
			}
			if _, err := up.Write(startup); err != nil {
				return
			}
			done := make(chan struct{}, 2)
			go func() { c.frontend(cr, up); done <- struct{}{} }()
			go func() { c.backend(bufio.NewReader(up), conn); done <- struct{}{} }()
			<-done
		}()
	}
}

// startup reads the client's startup message, refusing SSL and GSS
// encryption requests itself (the relay reads plain text), and returns it.
func (c *pgCounter) startup(conn net.Conn, r *bufio.Reader) ([]byte, error) {
	for {
		var head [8]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return nil, err
		}
		n := binary.BigEndian.Uint32(head[:4])
		code := binary.BigEndian.Uint32(head[4:])
		if n < 8 || n > 1<<20 {
			return nil, errors.New("bad startup")
		}
		if code == 80877103 || code == 80877104 { // SSLRequest, GSSENCRequest
			if _, err := conn.Write([]byte{'N'}); err != nil {
				return nil, err
			}
			continue
		}
		msg := make([]byte, n)
		copy(msg, head[:])
		if _, err := io.ReadFull(r, msg[8:]); err != nil {
			return nil, err
		}
		if code != 80877102 { // not a CancelRequest
			c.conns.Add(1)
		}
		return msg, nil
	}
}

// message reads one typed message of the protocol.
func message(r *bufio.Reader, buf []byte) ([]byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(head[1:]))
	if n < 4 {
		return nil, errors.New("bad message length")
	}
	buf = append(buf[:0], head[:]...)
	buf = append(buf, make([]byte, n-4)...)
	_, err := io.ReadFull(r, buf[5:])
	return buf, err
}

// cstring is the NUL-terminated string at the start of b, and the rest.
func cstring(b []byte) (string, []byte) {
	i := 0
	for i < len(b) && b[i] != 0 {
		i++
	}
	if i == len(b) {
		return string(b), nil
	}
	return string(b[:i]), b[i+1:]
}

// kind sorts a statement's text: a BEGIN, a transaction's end, or work.
func kind(query string) string {
	q := strings.ToLower(strings.TrimSpace(query))
	switch {
	case strings.HasPrefix(q, "begin"), strings.HasPrefix(q, "start transaction"):
		return "begin"
	case strings.HasPrefix(q, "commit"), strings.HasPrefix(q, "rollback"), strings.HasPrefix(q, "end"),
		strings.HasPrefix(q, "savepoint"), strings.HasPrefix(q, "release"):
		return "end"
	}
	return "work"
}

// frontend relays the client's messages, counting the statements executed:
// each simple Query, and each Execute of a portal, by the text of the
// statement it was bound from.
func (c *pgCounter) frontend(r *bufio.Reader, up net.Conn) {
	w := bufio.NewWriter(up)
	stmts := map[string]string{}   // prepared statement → kind
	portals := map[string]string{} // portal → kind
	count := func(k string) {
		switch k {
		case "begin":
			c.begs.Add(1)
		case "work":
			c.statements.Add(1)
		}
	}
	var buf []byte
	for {
		var err error
		if buf, err = message(r, buf); err != nil {
			return
		}
		body := buf[5:]
		switch buf[0] {
		case 'Q':
			q, _ := cstring(body)
			count(kind(q))
		case 'P':
			name, rest := cstring(body)
			q, _ := cstring(rest)
			stmts[name] = kind(q)
		case 'B':
			portal, rest := cstring(body)
			stmt, _ := cstring(rest)
			portals[portal] = stmts[stmt]
		case 'E':
			portal, _ := cstring(body)
			count(portals[portal])
		}
		if _, err := w.Write(buf); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}

// backend relays the server's messages, counting each ReadyForQuery after
// the first (which ends the connection's startup).
func (c *pgCounter) backend(r *bufio.Reader, conn net.Conn) {
	w := bufio.NewWriter(conn)
	started := false
	var buf []byte
	for {
		var err error
		if buf, err = message(r, buf); err != nil {
			return
		}
		if buf[0] == 'Z' {
			if started {
				c.roundTrips.Add(1)
			}
			started = true
		}
		if _, err := w.Write(buf); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}

// contentTypes counts the content types of the 200 answers to POSTs.
type contentTypes struct {
	mu sync.Mutex
	n  map[string]int
}

func (ct *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost && resp.StatusCode == http.StatusOK {
		t := resp.Header.Get("Content-Type")
		switch {
		case strings.HasPrefix(t, "application/json"):
			t = "JSON"
		case strings.HasPrefix(t, "text/event-stream"):
			t = "SSE"
		}
		ct.mu.Lock()
		ct.n[t]++
		ct.mu.Unlock()
	}
	return resp, err
}

func (ct *contentTypes) snapshot() map[string]int {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	m := map[string]int{}
	for k, v := range ct.n {
		m[k] = v
	}
	return m
}

// since says how the POSTs since before were answered.
func (ct *contentTypes) since(before map[string]int) string {
	var parts []string
	for k, v := range ct.snapshot() {
		if d := v - before[k]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, d))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// measureRoundTrips starts the two PostgreSQL setups anew behind counting
// relays and counts each workload's round trips.
func (tr *teamRun) measureRoundTrips(calls int) error {
	fmt.Fprintf(os.Stderr, "team: counting store round trips (%d calls per workload)...\n", calls)
	pgAddr, err := tr.pgAddr()
	if err != nil {
		return err
	}
	counters := map[string]*pgCounter{}
	defer func() {
		for _, c := range counters {
			c.ln.Close()
		}
	}()
	targets, err := tr.startSetups("count-", func(replica string) (string, error) {
		c, err := newPGCounter(pgAddr)
		if err != nil {
			return "", err
		}
		counters[replica] = c
		return c.ln.Addr().String(), nil
	})
	if err != nil {
		return err
	}
	of := map[string][]string{teamPG: {"solo"}, teamThree: {"r0", "r1", "r2"}}
	for _, t := range targets {
		var cs []*pgCounter
		for _, name := range of[t.name] {
			cs = append(cs, counters[name])
		}
		if err := tr.countTarget(t, cs, calls); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	return nil
}

// countTarget runs the workloads against one setup, counting the round
// trips of its replicas. Each count takes off what the replicas do while
// idle (heartbeats), at the rate measured beforehand.
func (tr *teamRun) countTarget(t teamTarget, cs []*pgCounter, calls int) error {
	read := func() pgCounts {
		var s pgCounts
		for _, c := range cs {
			r := c.read()
			s = pgCounts{s.conns + r.conns, s.roundTrips + r.roundTrips, s.statements + r.statements, s.begins + r.begins}
		}
		return s
	}
	const idle, settle = 4 * time.Second, 500 * time.Millisecond
	i0 := read()
	time.Sleep(idle)
	bgRate := read().minus(i0).times(1 / idle.Seconds())
	tr.counts = append(tr.counts, countRow{workload: "idle, per second", target: t.name, per: bgRate})

	ct := &contentTypes{n: map[string]int{}}
	hc := &http.Client{Transport: ct}
	ctx := context.Background()
	var progress atomic.Int64
	open := func(version string) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "mcphub-bench", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
		})
		return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: t.url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	}
	// count runs work (which makes n calls) and records its counts per
	// call.
	count := func(workload string, n int, work func() error) {
		row := countRow{workload: workload, target: t.name, calls: n}
		types := ct.snapshot()
		before := read()
		t0 := time.Now()
		row.err = work()
		row.answered = ct.since(types)
		time.Sleep(settle) // the hub's batched writes reach the store
		el := time.Since(t0)
		row.per = read().minus(before).minus(bgRate.times(el.Seconds())).times(1 / float64(n))
		tr.counts = append(tr.counts, row)
	}
	echo := func(cs *mcp.ClientSession) error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello from mcphub-bench"}})
		return err
	}
	// warm makes a session's first calls, which are not counted.
	warm := func(cs *mcp.ClientSession) error {
		for range 20 {
			if err := echo(cs); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
		return nil
	}
	// spread runs n calls over the sessions, callers goroutines on each.
	spread := func(css []*mcp.ClientSession, callers, n int, call func(*mcp.ClientSession) error) error {
		var left atomic.Int64
		left.Store(int64(n))
		errs := make(chan error, len(css)*callers)
		for _, s := range css {
			for range callers {
				go func() {
					var first error
					for left.Add(-1) >= 0 {
						if err := call(s); err != nil && first == nil {
							first = err
						}
					}
					errs <- first
				}()
			}
		}
		var first error
		for range len(css) * callers {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	}

	// Opening and closing session-era sessions.
	sessions := max(10, calls/20)
	var opened []*mcp.ClientSession
	count("session-era initialize", sessions, func() error {
		for range sessions {
			s, err := open("2025-11-25")
			if err != nil {
				return err
			}
			opened = append(opened, s)
		}
		return nil
	})
	count("session-era session close (DELETE)", len(opened), func() error {
		var first error
		for _, s := range opened {
			if err := s.Close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	})

	// One session-era session, one caller.
	s, err := open("2025-11-25")
	if err != nil {
		return err
	}
	defer s.Close()
	if err := warm(s); err != nil {
		return err
	}
	count("session-era tools/call echo, 1 caller", calls, func() error { return spread([]*mcp.ClientSession{s}, 1, calls, echo) })
	const notes = 10
	progress.Store(0)
	count(fmt.Sprintf("session-era tools/call, %d progress notifications", notes), calls, func() error {
		var tok atomic.Int64
		return spread([]*mcp.ClientSession{s}, 1, calls, func(s *mcp.ClientSession) error {
			p := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"n": notes}}
			p.SetProgressToken(fmt.Sprintf("bench-%d", tok.Add(1)))
			_, err := s.CallTool(ctx, p)
			return err
		})
	})
	if got := progress.Load(); got < int64(calls*notes)*9/10 {
		return fmt.Errorf("only %d of %d progress notifications arrived", got, calls*notes)
	}

	// Four session-era sessions, eight callers on each.
	var four []*mcp.ClientSession
	for range 4 {
		s, err := open("2025-11-25")
		if err != nil {
			return err
		}
		defer s.Close()
		if err := warm(s); err != nil {
			return err
		}
		four = append(four, s)
	}
	count("session-era tools/call echo, 4x8 callers", calls, func() error { return spread(four, 8, calls, echo) })

	// The stateless era: no session at all.
	m, err := open("2026-07-28")
	if err != nil {
		return fmt.Errorf("2026-07-28 client: %w", err)
	}
	defer m.Close()
	for range 20 {
		if err := echo(m); err != nil {
			return fmt.Errorf("2026-07-28 warm-up: %w", err)
		}
	}
	count("2026-07-28 tools/call echo, 1 caller", calls, func() error { return spread([]*mcp.ClientSession{m}, 1, calls, echo) })
	return nil
}

// f2 formats a count per call. Taking the idle rate off can leave a little
// below zero (a heartbeat more or less in the window), shown as 0.00.
func f2(v float64) string {
	if v < 0.005 {
		v = 0
	}
	return fmt.Sprintf("%.2f", v)
}

// print prints the team benchmark's tables.
func (tr *teamRun) print(w io.Writer, d time.Duration, rounds int) {
	fmt.Fprintf(w, "mcphub-bench -team: %d CPUs, %s, %d rounds of %s per load phase\n\n", runtime.NumCPU(), runtime.Version(), rounds, d)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tools/call echo\tsetup\tcalls/s\tp50\tp99\terrors\tthroughput vs SQLite\tp50 vs SQLite\t")
	for _, c := range tr.rows {
		var base result
		for _, o := range tr.rows {
			if o.shape == c.shape && o.target == teamSQLite {
				base = o.r
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%d\t%.2fx\t%.2fx\t\n", c.shape, c.target, c.r.throughput(), ms(c.r.p50), ms(c.r.p99), c.r.errors,
			c.r.throughput()/base.throughput(), ratio(c.r.p50, base.p50))
	}
	tw.Flush()
	for _, c := range tr.rows {
		if c.r.firstErr != nil {
			fmt.Fprintf(w, "%s, %s: %d errors; the first: %v\n", c.shape, c.target, c.r.errors, c.r.firstErr)
		}
	}

	fmt.Fprintln(w, "\nPostgreSQL round trips per call (counted on the wire; all replicas together; idle rate taken off):")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tsetup\tcalls\tround trips\tstatements\tBEGINs\tnew conns\tanswered as\t")
	for _, c := range tr.counts {
		n := "-"
		if c.calls > 0 {
			n = fmt.Sprint(c.calls)
		}
		ans := c.answered
		if ans == "" {
			ans = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.workload, c.target, n,
			f2(c.per.roundTrips), f2(c.per.statements), f2(c.per.begins), f2(c.per.conns), ans)
	}
	tw.Flush()
	for _, c := range tr.counts {
		if c.err != nil {
			fmt.Fprintf(w, "%s, %s: %v\n", c.workload, c.target, c.err)
		}
	}
	fmt.Fprintln(w, "\nround trips: waits for PostgreSQL (ReadyForQuery messages: one per simple query or extended-protocol Sync)")
	fmt.Fprintln(w, "statements: statements executed, BEGIN/COMMIT/ROLLBACK not included; BEGINs: explicit transactions")
}
