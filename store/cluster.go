package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of a ClusterConfig: a replica beats every second and is taken
// for dead after three silent ones, so its sessions move within five
// seconds of its last heartbeat.
const (
	DefaultHeartbeat = time.Second
	DefaultDeadline  = 3 * time.Second
)

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
	Log       *slog.Logger
}

// Cluster is this replica's membership of a team hub: its row in the
// replicas table, its heartbeat, and the takeover of dead replicas'
// sessions. Join → Start → Close.
type Cluster struct {
	s      *Store
	cfg    ClusterConfig
	secret string
	// registry is the digest of the registry served now (SetRegistry).
	registry atomic.Value

	mu   sync.Mutex
	stop context.CancelFunc
	done chan struct{}

	// bmu serialises heartbeats: the loop's and Current's.
	bmu sync.Mutex
	// epoch and lastOK date the last heartbeat the store took (or the
	// join), on the monotonic clock, which runs on while the process is
	// frozen: lastOK is nanoseconds since epoch.
	epoch  time.Time
	lastOK atomic.Int64
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
	c := &Cluster{s: s, cfg: cfg, epoch: time.Now()}
	c.registry.Store(cfg.Registry)
	if err := c.join(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// join takes a new generation and the sessions of the earlier ones.
func (c *Cluster) join(ctx context.Context) error {
	s, cfg := c.s, c.cfg
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	defer tx.Rollback()
	var gen int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO replicas (name, address, generation, started, heartbeat, registry, version)
		VALUES ($1, $2, 1, `+nowNS+`, `+nowNS+`, $3, $4)
		ON CONFLICT (name) DO UPDATE SET address = excluded.address, generation = replicas.generation + 1,
			started = excluded.started, heartbeat = excluded.heartbeat, registry = excluded.registry, version = excluded.version
		RETURNING generation`, cfg.Name, cfg.Address, c.registry.Load(), cfg.Version).Scan(&gen); err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE sessions SET owner_gen = $2 WHERE owner = $1 AND owner_gen < $2`, cfg.Name, gen)
	if err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	var b [32]byte
	rand.Read(b[:])
	if _, err := tx.ExecContext(ctx, `INSERT INTO cluster (one, secret) VALUES (1, $1) ON CONFLICT (one) DO NOTHING`, hex.EncodeToString(b[:])); err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT secret FROM cluster`).Scan(&c.secret); err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: join the cluster: %w", err)
	}
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
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.beat(ctx)
		c.reap(ctx)
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
		c.beatLocked(ctx)
	}
	return c.fresh()
}

// fresh reports whether the last heartbeat is younger than half the
// deadline.
func (c *Cluster) fresh() bool {
	return time.Since(c.epoch)-time.Duration(c.lastOK.Load()) < c.cfg.Deadline/2
}

// beat records this replica's heartbeat (see beatLocked).
func (c *Cluster) beat(ctx context.Context) {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	c.beatLocked(ctx)
}

// beatLocked records this replica's heartbeat; when its generation is no
// longer the stored one, another replica took it for dead and moved its
// sessions: it lets go of them and joins again as a new generation.
func (c *Cluster) beatLocked(ctx context.Context) {
	start := time.Since(c.epoch)
	who := c.s.identity()
	res, err := c.s.db.ExecContext(ctx, `UPDATE replicas SET heartbeat = `+nowNS+`, registry = $3
		WHERE name = $1 AND generation = $2`, who.name, who.gen, c.registry.Load())
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Log.Warn("could not record this replica's heartbeat", "err", err)
		}
		return
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		if err == nil {
			c.lastOK.Store(int64(start))
		}
		return
	}
	c.cfg.Log.Warn("this replica was taken for dead and its sessions moved to others; letting go of them and joining again",
		"replica", who.name, "generation", who.gen)
	if c.cfg.OnFenced != nil {
		c.cfg.OnFenced()
	}
	if err := c.join(ctx); err != nil && ctx.Err() == nil {
		c.cfg.Log.Error("could not join the cluster again", "err", err)
	}
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
	s := c.s
	s.wmu.Lock()
	defer s.wmu.Unlock()
	who := s.identity()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE replicas SET generation = generation + 1
		WHERE name = $1 AND generation = $2 AND heartbeat < `+nowNS+` - $3`, name, gen, c.cfg.Deadline.Nanoseconds())
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `UPDATE sessions SET owner = $1, owner_gen = $2, taken_from = owner WHERE owner = $3 RETURNING id`, who.name, who.gen, name)
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

// Claim makes this replica the owner of a session as Locate found it; it
// reports false when the session moved since (another replica claimed it
// first, or it was deleted). The caller claims only a session whose owner
// is not alive, or is this replica's earlier run.
func (c *Cluster) Claim(ctx context.Context, p Place) (bool, error) {
	s := c.s
	s.wmu.Lock()
	defer s.wmu.Unlock()
	who := s.identity()
	res, err := s.db.ExecContext(ctx, `UPDATE sessions SET owner = $1, owner_gen = $2, taken_from = owner WHERE id = $3 AND owner = $4 AND owner_gen = $5`,
		who.name, who.gen, p.ID, p.Owner, p.OwnerGen)
	if err != nil {
		return false, fmt.Errorf("store: claim session: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Address is a replica's base URL, and whether it beats.
func (c *Cluster) Address(ctx context.Context, name string) (string, bool, error) {
	var addr string
	var alive bool
	err := c.s.db.QueryRowContext(ctx, `SELECT address, heartbeat >= `+nowNS+` - $2 FROM replicas WHERE name = $1`,
		name, c.cfg.Deadline.Nanoseconds()).Scan(&addr, &alive)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("store: %w", err)
	}
	return addr, alive, nil
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
	_, err := c.s.db.ExecContext(ctx, `UPDATE replicas SET heartbeat = 0 WHERE name = $1 AND generation = $2`, who.name, who.gen)
	return err
}
