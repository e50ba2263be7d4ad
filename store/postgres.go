package store

import (
	"context"
	"database/sql"
	"errors"

	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgMaxConns bounds the pooled connections to PostgreSQL, per process.
const pgMaxConns = 8

// connectTimeout bounds one connection attempt when the URL sets none, so
// that an unreachable database fails a start in seconds, not the OS's
// minutes.
const connectTimeout = 10 * time.Second

// pingTimeout bounds Check's question to PostgreSQL.
const pingTimeout = 5 * time.Second

// IsURL reports whether s names a database by URL (postgres:// or
// postgresql://) rather than a SQLite data directory.
func IsURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql")
}

// OpenURL connects to the PostgreSQL database at rawURL
// (postgres://user:password@host:port/database?sslmode=…) and migrates it to
// the newest schema. Any replica may run it at any time: migrations take an
// advisory lock. Errors name the URL with its password masked.
func OpenURL(ctx context.Context, rawURL string) (*Store, error) {
	if !IsURL(rawURL) {
		// Not echoed: what is not a URL may be a connection string
		// with a password in it.
		return nil, errors.New("store: the store URL is not a PostgreSQL URL; write postgres://user:password@host:port/database")
	}
	where := RedactURL(rawURL)
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", where, scrub(err, rawURL))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	// A transaction left open by a replica that stopped (SIGSTOP, a
	// machine that froze) is ended by the server before the others take
	// that replica for dead: its uncommitted writes never land after its
	// sessions moved (Cluster).
	if _, ok := cfg.RuntimeParams["idle_in_transaction_session_timeout"]; !ok {
		cfg.RuntimeParams["idle_in_transaction_session_timeout"] = "2s"
	}
	db := sql.OpenDB(stdlib.GetConnector(*cfg))
	db.SetMaxOpenConns(pgMaxConns)
	db.SetMaxIdleConns(pgMaxConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: cannot reach %s: %w", where, scrub(err, rawURL))
	}
	h := handle{db: db}
	if err := h.prepare(postgresDialect, where); err != nil {
		h.close()
		return nil, scrub(err, rawURL)
	}
	return &Store{dialect: postgresDialect, where: where, handle: h, pgcfg: cfg}, nil
}

// ping asks PostgreSQL whether it answers.
func (s *Store) ping() error {
	s.hmu.RLock()
	defer s.hmu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("store: cannot reach %s: %w", s.where, err)
	}
	return nil
}

// secretParams are the URL parameters pgx reads that hold a secret.
var secretParams = []string{"password", "sslpassword"}

// RedactURL returns a database URL fit for messages: its password, in the
// user part or as a password= or sslpassword= parameter, is masked.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a database URL that does not parse)"
	}
	q := u.Query()
	masked := false
	for _, k := range secretParams {
		if q.Has(k) {
			q.Set(k, "xxxxx")
			masked = true
		}
	}
	if masked {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// scrub keeps a database password out of an error: the driver's messages
// quote the connection string in some cases.
func scrub(err error, rawURL string) error {
	u, perr := url.Parse(rawURL)
	if err == nil || perr != nil {
		return err
	}
	var secrets []string
	if pw, ok := u.User.Password(); ok && pw != "" {
		secrets = append(secrets, pw, url.QueryEscape(pw), url.PathEscape(pw))
	}
	for _, k := range secretParams {
		if pw := u.Query().Get(k); pw != "" {
			secrets = append(secrets, pw, url.QueryEscape(pw))
		}
	}
	msg := err.Error()
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	if msg == err.Error() {
		return err
	}
	return &scrubbed{msg: msg, err: err}
}

// scrubbed is an error whose message had a password masked; it still
// unwraps to the original for errors.Is.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }
