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
	s.wmu.Lock()
	defer s.wmu.Unlock()
	perNS := perSecond / 1e9
	now, args := "?4", []any{subject, float64(burst), perNS, time.Now().UnixNano()}
	least := "min"
	if s.dialect.name == "postgres" {
		now, args, least = `CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000000 AS BIGINT)`, args[:3], "LEAST"
	}
	// The casts tell PostgreSQL the parameters' type, which it would
	// otherwise take from the integers they meet.
	fill := least + `(CAST(?2 AS DOUBLE PRECISION), rate_buckets.tokens + (NOW - rate_buckets.stamp) * CAST(?3 AS DOUBLE PRECISION))`
	query := `INSERT INTO rate_buckets (subject, tokens, stamp) VALUES (?1, CAST(?2 AS DOUBLE PRECISION) - 1, NOW)
		ON CONFLICT (subject) DO UPDATE SET tokens = ` + fill + ` - 1, stamp = NOW
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
