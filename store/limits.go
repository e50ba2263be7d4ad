package store

import (
	"database/sql"
	"errors"
	"strings"
	"time"
)

// Take draws one token from subject's bucket, which fills at perSecond up
// to burst tokens; it returns 0 when it got one, else how long until the
// bucket holds one. One statement decides (an upsert that updates only
// when a token is there), so processes sharing a PostgreSQL store draw
// from one bucket; there the database's clock paces it.
func (s *Store) Take(subject string, perSecond float64, burst int) (time.Duration, error) {
	if perSecond <= 0 {
		return 0, nil
	}
	if s.dialect.name != "postgres" {
		// SQLite has one writer; PostgreSQL's upsert is atomic on its
		// own, and needs not wait behind this process's other writes.
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	perNS := perSecond / 1e9
	now, args := "?4", []any{subject, float64(burst), perNS, time.Now().UnixNano()}
	least, greatest := "min", "max"
	if s.dialect.name == "postgres" {
		now, args, least, greatest = `CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000000 AS BIGINT)`, args[:3], "LEAST", "GREATEST"
	}
	// The casts tell PostgreSQL the parameters' type, which it would
	// otherwise take from the integers they meet. A statement that waited
	// for the row may carry an earlier time than the stamp another wrote:
	// time never runs backwards in the bucket.
	fill := least + `(CAST(?2 AS DOUBLE PRECISION), rate_buckets.tokens + ` + greatest + `(NOW - rate_buckets.stamp, 0) * CAST(?3 AS DOUBLE PRECISION))`
	query := `INSERT INTO rate_buckets (subject, tokens, stamp) VALUES (?1, CAST(?2 AS DOUBLE PRECISION) - 1, NOW)
		ON CONFLICT (subject) DO UPDATE SET tokens = ` + fill + ` - 1, stamp = ` + greatest + `(NOW, rate_buckets.stamp)
		WHERE ` + fill + ` >= 1 RETURNING tokens`
	var left float64
	err := s.db.QueryRow(s.dialect.q(strings.ReplaceAll(query, "NOW", now)), args...).Scan(&left)
	if err == nil {
		return 0, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	// No token: how long until the bucket holds one.
	var have float64
	query = `SELECT ` + fill + ` FROM rate_buckets WHERE subject = ?1`
	if err := s.db.QueryRow(s.dialect.q(strings.ReplaceAll(query, "NOW", now)), args...).Scan(&have); err != nil {
		return 0, err
	}
	wait := time.Duration((1 - have) / perNS)
	return max(wait, time.Millisecond), nil
}
