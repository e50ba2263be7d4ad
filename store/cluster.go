package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Defaults of a ClusterConfig: a replica beats every second and is taken
// for dead after three silent ones, so its sessions move within five
// seconds of its last heartbeat.
const (
	DefaultHeartbeat = time.Second
	DefaultDeadline  = 3 * time.Second
)

// clusterChannel is the LISTEN/NOTIFY channel on which a replica says that
// the cluster changed: it joined, stopped, fenced another (taking its
// sessions), or took or gave up a replicas = "one" server. The others then
// look at once instead of at their next heartbeat; a replica that dies
// without a word is still found by its silent heartbeat.
const clusterChannel = "mcphub_cluster"

// notifySQL sends the cluster's notification when its transaction commits.
const notifySQL = `SELECT pg_notify('` + clusterChannel + `', $1)`

// nowNS is the database's clock in unix nanoseconds: heartbeats are read
// against one clock, whatever the replicas' own say.
const nowNS = `CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000 AS BIGINT)`

// ErrNoCluster is Join's answer on SQLite: replicas share PostgreSQL.
var ErrNoCluster = errors.New("store: replicas share a PostgreSQL store; SQLite serves one hub")

// ClusterConfig says who a replica is and what it does when sessions move.
type ClusterConfig struct {
	// Name is the replica's stable name (host:port by default): a
	// restarted replica keeps it, and with it its upstream sessions.
	Name string
	// Address is the base URL other replicas forward its sessions'
	// requests to, such as http://10.0.0.5:7733.
	Address string
	// Registry is a digest of the registry it serves, so that replicas
	// whose registries differ can say so; Version is mcphub's.
	Registry, Version string
	// Heartbeat is how often it beats; Deadline, how long a replica may be
	// silent before the others take its sessions (DefaultHeartbeat,
	// DefaultDeadline when zero).
	Heartbeat, Deadline time.Duration
	// OnClaimed gets the sessions this replica took over from a dead one,
	// to restore them; OnFenced is called when this replica learns it was
	// taken for dead and its sessions moved: it must let go of every
	// session it holds (its writes for them are refused already).
	OnClaimed func(ids []string)
	OnFenced  func()
	// OnGrant is called with a server's name when a command announced
	// that its shared OAuth grant changed (a sign-in, a sign-out):
	// AnnounceGrant; with "" when announcements may have been missed (the
	// notification connection dropped). It must not block.
	OnGrant func(server string)
	// OnStale is called when this replica has not beaten for half the
	// deadline (the store is out of reach): it must cut the streams it
	// serves, since another replica may take their sessions. OnLost is
	// called, and the heartbeat stops, when another live process runs
	// under this replica's name: serving must stop.
	OnStale func()
	OnLost  func(error)
	Log     *slog.Logger
}

// ErrNameInUse says another live process runs under a replica's name.
var ErrNameInUse = errors.New("store: the replica name is in use")

// Cluster is this replica's membership of a team hub: its row in the
// replicas table, its heartbeat, and the takeover of dead replicas'
// sessions. Join → Start → Close.
type Cluster struct {
	s      *Store
	cfg    ClusterConfig
	secret string

	// slotWaits orders this process's takers of one caller's call slots
	// (a channel holding one token per caller), so that at most one of
	// them waits in the store; orphans are the slots whose release could
	// not reach the store, given back at the next heartbeat.
	slotWaits sync.Map
	orphanMu  sync.Mutex
	orphans   []string
	// registry is the digest of the registry served now (SetRegistry).
	registry atomic.Value

	mu   sync.Mutex
	stop context.CancelFunc
	done chan struct{}

	// kick wakes the heartbeat loop to look at the replicas at once: a
	// NOTIFY on clusterChannel said one joined, stopped, was fenced or
	// gave a server up.
	kick chan struct{}

	// bmu serialises heartbeats: the loop's and Current's.
	bmu sync.Mutex
	// epoch and lastOK date the last heartbeat the store took (or the
	// join), on the monotonic clock, which runs on while the process is
	// frozen: lastOK is nanoseconds since epoch.
	epoch  time.Time
	lastOK atomic.Int64
	// beatErr is why the last heartbeat failed, nil once one is taken.
	beatErr atomic.Pointer[error]
	// started is the database time this run joined at, telling it from
	// another process under the same name.
	started int64
	// stale is set while OnStale has been called and no beat has been
	// taken since.
	stale bool

	// wmu guards watch: each replica generation's liveness as last read,
	// and the channels Gone handed out.
	wmu   sync.Mutex
	live  map[string]liveness
	gones map[gone]map[*chan struct{}]func() bool
}

// liveness is a replica's generation and whether it beats.
type liveness struct {
	gen   int64
	alive bool
}

// gone names a replica generation some caller waits to see stop.
type gone struct {
	name string
	gen  int64
}

// Join registers this replica under cfg.Name with a new generation, takes
// over the sessions its earlier runs held, and from then on the store
// writes as this replica: every session write is refused for a session
// another replica owns.
func (s *Store) Join(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	if s.dialect != postgresDialect {
		return nil, ErrNoCluster
	}
	if cfg.Name == "" || cfg.Address == "" {
		return nil, errors.New("store: a replica needs a name and an address")
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = DefaultDeadline
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	c := &Cluster{s: s, cfg: cfg, epoch: time.Now(), kick: make(chan struct{}, 1)}
	c.registry.Store(cfg.Registry)
	if err := c.join(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// join takes a new generation and the sessions of the earlier ones.
func (c *Cluster) join(ctx context.Context) (err error) {
	s, cfg := c.s, c.cfg
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	defer tx.Rollback()
	// Another process beating under this name at another address is a
	// second replica given the same name: joining would fence it, and it
	// this one, back and forth.
	var other string
	err = tx.QueryRowContext(ctx, `SELECT address FROM replicas WHERE name = $1 AND heartbeat >= `+nowNS+` - $2 AND address <> $3 FOR UPDATE`,
		cfg.Name, cfg.Deadline.Nanoseconds(), cfg.Address).Scan(&other)
	if err == nil {
		return fmt.Errorf("%w: %q beats at %s; give each replica its own --replica", ErrNameInUse, cfg.Name, other)
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	var gen, started int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO replicas (name, address, generation, started, heartbeat, registry, version)
		VALUES ($1, $2, 1, `+nowNS+`, `+nowNS+`, $3, $4)
		ON CONFLICT (name) DO UPDATE SET address = excluded.address, generation = replicas.generation + 1,
			started = excluded.started, heartbeat = excluded.heartbeat, registry = excluded.registry, version = excluded.version
		RETURNING generation, started`, cfg.Name, cfg.Address, c.registry.Load(), cfg.Version).Scan(&gen, &started); err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE sessions SET owner_gen = $2 WHERE owner = $1 AND owner_gen < $2`, cfg.Name, gen)
	if err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	// The calls an earlier run had in progress ended with it.
	if _, err := tx.ExecContext(ctx, `DELETE FROM call_slots WHERE replica = $1`, cfg.Name); err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	var b [32]byte
	rand.Read(b[:])
	if _, err := tx.ExecContext(ctx, `INSERT INTO cluster (one, secret) VALUES (1, $1) ON CONFLICT (one) DO NOTHING`, hex.EncodeToString(b[:])); err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	var secret string
	if err := tx.QueryRowContext(ctx, `SELECT secret FROM cluster`).Scan(&secret); err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	if _, err := tx.ExecContext(ctx, notifySQL, "joined "+cfg.Name); err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	if c.secret == "" {
		c.secret = secret // read by others only once Join has returned
	}
	c.started = started
	s.who.Store(&identity{name: cfg.Name, gen: gen})
	c.lastOK.Store(int64(time.Since(c.epoch)))
	n, _ := res.RowsAffected()
	cfg.Log.Info("joined the cluster", "replica", cfg.Name, "generation", gen, "address", cfg.Address, "sessions_kept", n)
	return nil
}

// SetRegistry records the digest of the registry this replica serves now
// (after a live reload); the next heartbeat stores it.
func (c *Cluster) SetRegistry(digest string) { c.registry.Store(digest) }

// Deadline is how long a replica may be silent before it is taken for dead.
func (c *Cluster) Deadline() time.Duration { return c.cfg.Deadline }

// Secret authenticates requests one replica forwards to another. Every
// replica reads the same one from the store.
func (c *Cluster) Secret() string { return c.secret }

// Name is this replica's name.
func (c *Cluster) Name() string { return c.cfg.Name }

// Start beats and watches the other replicas until Close.
func (c *Cluster) Start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		return
	}
	ctx, c.stop = context.WithCancel(ctx)
	c.done = make(chan struct{})
	go c.run(ctx)
}

// run is the heartbeat: every beat it tells the store this replica lives,
// and takes over the sessions of replicas that stopped beating.
func (c *Cluster) run(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(c.cfg.Heartbeat)
	defer t.Stop()
	// The listener is this loop's: it stops with ctx, and the loop (and
	// so Close) waits for it.
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		c.listen(ctx)
	}()
	defer func() { <-listening }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
			c.reap(ctx)
			c.watch(ctx)
			continue
		case <-t.C:
		}
		if err := c.beat(ctx); err != nil {
			c.cfg.Log.Error("stopping: another process serves as this replica", "err", err)
			if c.cfg.OnLost != nil {
				c.cfg.OnLost(err)
			}
			return
		}
		c.checkStale()
		c.reap(ctx)
		c.watch(ctx)
	}
}

// listen holds a connection LISTENing on clusterChannel until ctx ends,
// kicking the loop on every notification; it connects again, with
// backoff, when the connection drops.
func (c *Cluster) listen(ctx context.Context) {
	if c.s.pgcfg == nil {
		return
	}
	listened := false
	for delay := writeBackoffMin; ctx.Err() == nil; delay = min(2*delay, writeBackoffMax) {
		conn, err := pgx.ConnectConfig(ctx, c.s.pgcfg)
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+clusterChannel); err == nil {
				delay = writeBackoffMin
				c.kickLoop() // what changed while not listening
				if listened && c.cfg.OnGrant != nil {
					// A grant may have changed while not listening.
					c.cfg.OnGrant("")
				}
				listened = true
				for err == nil {
					var n *pgconn.Notification
					if n, err = conn.WaitForNotification(ctx); err == nil {
						if server, ok := strings.CutPrefix(n.Payload, grantNotice); ok {
							if c.cfg.OnGrant != nil {
								c.cfg.OnGrant(server)
							}
							continue
						}
						c.kickLoop()
					}
				}
			}
			conn.Close(context.Background())
		}
		if ctx.Err() != nil {
			return
		}
		c.cfg.Log.Debug("the cluster's notification connection dropped; connecting again", "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Backoff of the notification connection.
const (
	writeBackoffMin = 100 * time.Millisecond
	writeBackoffMax = 5 * time.Second
)

// kickLoop wakes the heartbeat loop to look at the replicas now.
func (c *Cluster) kickLoop() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// checkStale calls OnStale once when the heartbeat has gone unrecorded
// for half the deadline.
func (c *Cluster) checkStale() {
	if c.fresh() {
		c.stale = false
		return
	}
	if !c.stale {
		c.stale = true
		c.cfg.Log.Warn("the store has not taken this replica's heartbeat lately; cutting its streams, as others may take their sessions")
		if c.cfg.OnStale != nil {
			c.cfg.OnStale()
		}
	}
}

// Current reports whether this replica may go on serving the sessions it
// holds: its last heartbeat was taken less than half the deadline ago. If
// not (the store was out of reach, or the process was frozen), it beats
// first, which, when it was taken for dead meanwhile, lets go of every
// session (OnFenced) before returning. False means the store cannot say.
func (c *Cluster) Current(ctx context.Context) bool {
	if c.fresh() {
		return true
	}
	c.bmu.Lock()
	defer c.bmu.Unlock()
	if !c.fresh() {
		if err := c.beatLocked(ctx); err != nil {
			return false
		}
	}
	return c.fresh()
}

// Problem says why the store has not taken this replica's heartbeat for
// half the deadline, without asking it; nil while it has.
func (c *Cluster) Problem() error {
	if c.fresh() {
		return nil
	}
	age := (time.Since(c.epoch) - time.Duration(c.lastOK.Load())).Round(100 * time.Millisecond)
	if err := c.beatErr.Load(); err != nil {
		return fmt.Errorf("no heartbeat taken for %s: %w", age, *err)
	}
	return fmt.Errorf("no heartbeat taken for %s", age)
}

// fresh reports whether the last heartbeat is younger than half the
// deadline.
func (c *Cluster) fresh() bool {
	return time.Since(c.epoch)-time.Duration(c.lastOK.Load()) < c.cfg.Deadline/2
}

// beat records this replica's heartbeat (see beatLocked).
func (c *Cluster) beat(ctx context.Context) error {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	return c.beatLocked(ctx)
}

// beatLocked records this replica's heartbeat; when its generation is no
// longer the stored one, another replica took it for dead and moved its
// sessions: it lets go of them and joins again as a new generation. It
// returns ErrNameInUse, joining nothing, when another live process has
// joined under this replica's name since.
func (c *Cluster) beatLocked(ctx context.Context) error {
	start := time.Since(c.epoch)
	who := c.s.identity()
	res, err := c.s.db.ExecContext(ctx, `UPDATE replicas SET heartbeat = `+nowNS+`, registry = $3
		WHERE name = $1 AND generation = $2`, who.name, who.gen, c.registry.Load())
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Log.Warn("could not record this replica's heartbeat", "err", err)
			e := fmt.Errorf("store: cannot reach %s: %w", c.s.where, err)
			c.beatErr.Store(&e)
		}
		return nil
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		if err == nil {
			c.lastOK.Store(int64(start))
			c.beatErr.Store(nil)
			c.dropOrphanSlots(ctx)
		}
		return nil
	}
	var started int64
	var fresh bool
	var addr string
	err = c.s.db.QueryRowContext(ctx, `SELECT started, address, heartbeat >= `+nowNS+` - $2 FROM replicas WHERE name = $1`,
		who.name, c.cfg.Deadline.Nanoseconds()).Scan(&started, &addr, &fresh)
	if err == nil && fresh && started != c.started {
		return fmt.Errorf("%w: %q joined again at %s while this process was out of touch; give each replica its own --replica", ErrNameInUse, who.name, addr)
	}
	c.cfg.Log.Warn("this replica was taken for dead and its sessions moved to others; letting go of them and joining again",
		"replica", who.name, "generation", who.gen)
	if c.cfg.OnFenced != nil {
		c.cfg.OnFenced()
	}
	if err := c.join(ctx); err != nil {
		if errors.Is(err, ErrNameInUse) {
			return err
		}
		if ctx.Err() == nil {
			c.cfg.Log.Error("could not join the cluster again", "err", err)
		}
	}
	return nil
}

// reap takes over the sessions of each replica whose heartbeat is older
// than the deadline: its generation is raised first (so it learns, should
// it come back, that it was fenced), then its sessions become this
// replica's, in one transaction that only one replica wins.
func (c *Cluster) reap(ctx context.Context) {
	who := c.s.identity()
	rows, err := c.s.db.QueryContext(ctx, `SELECT name, generation FROM replicas r
		WHERE name <> $1 AND heartbeat < `+nowNS+` - $2
		AND EXISTS (SELECT 1 FROM sessions WHERE owner = r.name)`, who.name, c.cfg.Deadline.Nanoseconds())
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Log.Warn("could not look for replicas that stopped", "err", err)
		}
		return
	}
	type dead struct {
		name string
		gen  int64
	}
	var gone []dead
	for rows.Next() {
		var d dead
		if err := rows.Scan(&d.name, &d.gen); err == nil {
			gone = append(gone, d)
		}
	}
	rows.Close()
	for _, d := range gone {
		ids, err := c.takeOver(ctx, d.name, d.gen)
		if err != nil {
			if ctx.Err() == nil {
				c.cfg.Log.Warn("could not take over a stopped replica's sessions", "replica", d.name, "err", err)
			}
			continue
		}
		if len(ids) == 0 {
			continue
		}
		c.cfg.Log.Warn("took over the sessions of a replica that stopped beating", "replica", d.name, "sessions", len(ids))
		if c.cfg.OnClaimed != nil {
			c.cfg.OnClaimed(ids)
		}
	}
}

// takeOver fences the replica name at generation gen and claims its
// sessions; nothing when another replica did first.
func (c *Cluster) takeOver(ctx context.Context, name string, gen int64) ([]string, error) {
	return c.claim(ctx, name, gen, "")
}

// claim takes over, in one transaction only one replica wins, the sessions
// of the replica name at generation gen once its heartbeat is older than
// the deadline: the replica is fenced (its generation raised, so it learns
// it was taken for dead) and every session it holds becomes this
// replica's. When gen is not the replica's current generation (that run is
// gone: it restarted, or was fenced already), only the session id is
// claimed, if it still belongs to that run. An earlier run of this replica
// is claimed from at once. It returns the ids claimed.
func (c *Cluster) claim(ctx context.Context, name string, gen int64, id string) ([]string, error) {
	s := c.s
	s.wmu.Lock()
	defer s.wmu.Unlock()
	who := s.identity()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var query string
	var args []any
	if name == who.name {
		query, args = `UPDATE sessions SET owner_gen = $1 WHERE id = $2 AND owner = $3 AND owner_gen = $4 AND owner_gen < $1 RETURNING id`,
			[]any{who.gen, id, name, gen}
	} else {
		res, err := tx.ExecContext(ctx, `UPDATE replicas SET generation = generation + 1
			WHERE name = $1 AND generation = $2 AND heartbeat < `+nowNS+` - $3`, name, gen, c.cfg.Deadline.Nanoseconds())
		if err != nil {
			return nil, err
		}
		fenced, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		switch {
		case fenced == 1:
			if _, err := tx.ExecContext(ctx, notifySQL, "fenced "+name); err != nil {
				return nil, err
			}
			query, args = `UPDATE sessions SET owner = $1, owner_gen = $2, taken_from = owner WHERE owner = $3 RETURNING id`,
				[]any{who.name, who.gen, name}
		case id == "":
			return nil, nil
		default:
			query, args = `UPDATE sessions SET owner = $1, owner_gen = $2, taken_from = owner
				WHERE id = $3 AND owner = $4 AND owner_gen = $5
				AND NOT EXISTS (SELECT 1 FROM replicas WHERE name = $4 AND generation = $5)
				RETURNING id`, []any{who.name, who.gen, id, name, gen}
		}
	}
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return ids, tx.Commit()
}

// Place is where a stored session lives.
type Place struct {
	// ID is the session's id; Found is false when the store holds none.
	ID    string
	Found bool
	// Owner and OwnerGen name the replica (and its generation) holding
	// it; Address is where that replica is reached.
	Owner    string
	OwnerGen int64
	Address  string
	// Mine says this replica holds it; Alive, that its owner is beating,
	// in the generation that owns it.
	Mine, Alive bool
}

// Locate reports where a stored session lives.
func (c *Cluster) Locate(ctx context.Context, session string) (Place, error) {
	who := c.s.identity()
	var p Place
	var rgen sql.NullInt64
	var addr sql.NullString
	var fresh sql.NullBool
	err := c.s.db.QueryRowContext(ctx, `SELECT s.owner, s.owner_gen, r.address, r.generation, r.heartbeat >= `+nowNS+` - $2
		FROM sessions s LEFT JOIN replicas r ON r.name = s.owner WHERE s.id = $1`, session, c.cfg.Deadline.Nanoseconds()).
		Scan(&p.Owner, &p.OwnerGen, &addr, &rgen, &fresh)
	if errors.Is(err, sql.ErrNoRows) {
		return Place{}, nil
	}
	if err != nil {
		return Place{}, fmt.Errorf("store: locate session: %w", err)
	}
	p.ID, p.Found, p.Address = session, true, addr.String
	p.Mine = p.Owner == who.name && p.OwnerGen == who.gen
	p.Alive = rgen.Valid && rgen.Int64 == p.OwnerGen && fresh.Bool
	return p, nil
}

// Claim takes a session over as Locate found it, from a replica that
// stopped beating or from this replica's earlier run (see claim). It
// returns the ids of every session it took, the one asked for among them:
// the stopped replica's other sessions come along, so that it is fenced
// once and its calls are finished together. None when the session moved
// since, or its owner still beats.
func (c *Cluster) Claim(ctx context.Context, p Place) ([]string, error) {
	ids, err := c.claim(ctx, p.Owner, p.OwnerGen, p.ID)
	if err != nil {
		return nil, fmt.Errorf("store: claim session: %w", err)
	}
	return ids, nil
}

// watch reads every replica's generation and liveness, and closes the
// channels Gone handed out for generations that stopped beating or were
// replaced.
func (c *Cluster) watch(ctx context.Context) {
	rows, err := c.s.db.QueryContext(ctx, `SELECT name, generation, heartbeat >= `+nowNS+` - $1 FROM replicas`, c.cfg.Deadline.Nanoseconds())
	if err != nil {
		return
	}
	live := map[string]liveness{}
	for rows.Next() {
		var name string
		var l liveness
		if rows.Scan(&name, &l.gen, &l.alive) == nil {
			live[name] = l
		}
	}
	rows.Close()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.live = live
	for g, chans := range c.gones {
		if l, ok := live[g.name]; ok && goneBy(l, g.gen) {
			for ch, stop := range chans {
				stop()
				close(*ch)
			}
			delete(c.gones, g)
		}
	}
}

// goneBy reports whether a replica, as last read, has stopped beating in
// generation gen or been replaced by a newer one. A generation newer than
// the one read (it joined since) is not gone.
func goneBy(l liveness, gen int64) bool {
	return l.gen > gen || (l.gen == gen && !l.alive)
}

// Gone returns a channel closed once the replica name, in generation gen,
// stops beating or is replaced by a newer generation, as the heartbeat loop
// reads the replicas (each beat); it is forgotten when ctx ends. A replica
// the loop has not read yet, or read in an older generation, is waited for.
func (c *Cluster) Gone(ctx context.Context, name string, gen int64) <-chan struct{} {
	ch := make(chan struct{})
	g := gone{name, gen}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if l, ok := c.live[g.name]; ok && goneBy(l, gen) {
		close(ch)
		return ch
	}
	if c.gones == nil {
		c.gones = map[gone]map[*chan struct{}]func() bool{}
	}
	if c.gones[g] == nil {
		c.gones[g] = map[*chan struct{}]func() bool{}
	}
	c.gones[g][&ch] = context.AfterFunc(ctx, func() {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		if m := c.gones[g]; m != nil {
			delete(m, &ch)
			if len(m) == 0 {
				delete(c.gones, g)
			}
		}
	})
	return ch
}

// ServerOwner is the replica that runs a replicas = "one" server's process
// cluster-wide: name, its address, and its generation (for Gone). When no
// live replica runs it (none ever did, or the one recorded stopped beating
// or was replaced by a newer run), this replica takes it, in a statement
// only one replica wins; mine says it did, or had.
func (c *Cluster) ServerOwner(ctx context.Context, server string) (name, address string, gen int64, mine bool, err error) {
	who := c.s.identity()
	if _, err = c.s.db.ExecContext(ctx, `INSERT INTO server_owners (server, replica, generation) VALUES ($1, $2, $3)
		ON CONFLICT (server) DO UPDATE SET replica = excluded.replica, generation = excluded.generation
		WHERE NOT EXISTS (SELECT 1 FROM replicas r WHERE r.name = server_owners.replica
			AND r.generation = server_owners.generation AND r.heartbeat >= `+nowNS+` - $4)`,
		server, who.name, who.gen, c.cfg.Deadline.Nanoseconds()); err != nil {
		return "", "", 0, false, fmt.Errorf("store: claim server %s: %w", server, err)
	}
	var addr sql.NullString
	if err = c.s.db.QueryRowContext(ctx, `SELECT so.replica, so.generation, r.address FROM server_owners so
		LEFT JOIN replicas r ON r.name = so.replica WHERE so.server = $1`, server).Scan(&name, &gen, &addr); err != nil {
		return "", "", 0, false, fmt.Errorf("store: claim server %s: %w", server, err)
	}
	return name, addr.String, gen, name == who.name && gen == who.gen, nil
}

// Self is this replica's name and generation now.
func (c *Cluster) Self() (string, int64) {
	who := c.s.identity()
	return who.name, who.gen
}

// Address is a replica's base URL, its generation, and whether it beats.
func (c *Cluster) Address(ctx context.Context, name string) (string, int64, bool, error) {
	var addr string
	var gen int64
	var alive bool
	err := c.s.db.QueryRowContext(ctx, `SELECT address, generation, heartbeat >= `+nowNS+` - $2 FROM replicas WHERE name = $1`,
		name, c.cfg.Deadline.Nanoseconds()).Scan(&addr, &gen, &alive)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("store: %w", err)
	}
	return addr, gen, alive, nil
}

// ReleaseServer gives up a replicas = "one" server this replica runs (it
// was removed or disabled here, or the replica stops), so another replica
// may take it at once.
func (c *Cluster) ReleaseServer(ctx context.Context, server string) error {
	who := c.s.identity()
	_, err := c.s.db.ExecContext(ctx, `WITH gone AS (DELETE FROM server_owners WHERE server = $1 AND replica = $2 AND generation = $3 RETURNING server)
		SELECT pg_notify('`+clusterChannel+`', 'released ' || server) FROM gone`, server, who.name, who.gen)
	return err
}

// Replica is one replica as the store knows it.
type Replica struct {
	Name, Address      string
	Generation         int64
	Started, Heartbeat time.Time // by the database's clock
	Alive              bool
	Registry, Version  string
	Sessions           int
	Self               bool
}

// Replicas lists every replica the store knows, with the sessions each
// holds, the heartbeat read against the database's clock.
func (c *Cluster) Replicas(ctx context.Context) ([]Replica, time.Time, error) {
	who := c.s.identity()
	var now int64
	if err := c.s.db.QueryRowContext(ctx, `SELECT `+nowNS).Scan(&now); err != nil {
		return nil, time.Time{}, fmt.Errorf("store: %w", err)
	}
	rows, err := c.s.db.QueryContext(ctx, `SELECT r.name, r.address, r.generation, r.started, r.heartbeat, r.registry, r.version,
		(SELECT COUNT(*) FROM sessions s WHERE s.owner = r.name AND s.owner_gen = r.generation)
		FROM replicas r ORDER BY r.name`)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	var out []Replica
	for rows.Next() {
		var r Replica
		var started, beat int64
		if err := rows.Scan(&r.Name, &r.Address, &r.Generation, &started, &beat, &r.Registry, &r.Version, &r.Sessions); err != nil {
			return nil, time.Time{}, fmt.Errorf("store: %w", err)
		}
		r.Started, r.Heartbeat = time.Unix(0, started), time.Unix(0, beat)
		r.Alive = now-beat <= c.cfg.Deadline.Nanoseconds()
		r.Self = r.Name == who.name && r.Generation == who.gen
		out = append(out, r)
	}
	return out, time.Unix(0, now), rows.Err()
}

// ServerOwners maps each replicas = "one" server a live replica runs to
// that replica.
func (c *Cluster) ServerOwners(ctx context.Context) (map[string]string, error) {
	rows, err := c.s.db.QueryContext(ctx, `SELECT so.server, so.replica FROM server_owners so
		JOIN replicas r ON r.name = so.replica AND r.generation = so.generation AND r.heartbeat >= `+nowNS+` - $1
		ORDER BY so.server`, c.cfg.Deadline.Nanoseconds())
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var server, replica string
		if err := rows.Scan(&server, &replica); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		out[server] = replica
	}
	return out, rows.Err()
}

// Close stops the heartbeat and marks this replica stopped, so the others
// take its sessions at their next beat rather than after the deadline. It
// is idempotent.
func (c *Cluster) Close() error {
	c.mu.Lock()
	stop, done := c.stop, c.done
	c.stop = func() {}
	c.mu.Unlock()
	if stop != nil {
		stop()
		if done != nil {
			<-done
		}
	}
	who := c.s.identity()
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	_, err := c.s.db.ExecContext(ctx, `WITH stopped AS (UPDATE replicas SET heartbeat = 0 WHERE name = $1 AND generation = $2 RETURNING name)
		SELECT pg_notify('`+clusterChannel+`', 'stopped ' || name) FROM stopped`, who.name, who.gen)
	return err
}

// grantNotice starts the notification that a server's shared OAuth grant
// changed.
const grantNotice = "grant "

// AnnounceGrant tells every replica on this PostgreSQL store that the
// shared OAuth grant of the server called name changed (a sign-in or a
// sign-out by a command), so that each connects to it again with what the
// store now holds (ClusterConfig.OnGrant). A no-op on SQLite.
func (s *Store) AnnounceGrant(name string) error {
	if s.dialect != postgresDialect {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	_, err := s.db.ExecContext(ctx, notifySQL, grantNotice+name)
	return err
}
