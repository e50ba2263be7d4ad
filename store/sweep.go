package store

import (
	"fmt"
	"math"
	"time"
)

// Retention bounds the stored events: by age, per session, and in all. A
// zero field sets no bound.
type Retention struct {
	Before        time.Time // events stored before it go
	SessionEvents int       // per session, newest kept
	SessionBytes  int64     // per session, newest kept
	TotalBytes    int64     // all sessions together, newest kept
}

// The most one locked step of a sweep deletes: enough to make headway,
// little enough that a batched write queued behind it is not held up.
const (
	stepEvents = 1000
	stepBytes  = 8 << 20
	// stepSessions bounds the idle sessions one step deletes, with all
	// their streams and events.
	stepSessions = 16
)

// Sweep deletes the sessions last seen before idleBefore (with everything
// they own), then applies keep in order: it drops the events stored before
// keep.Before, trims every session to its newest keep.SessionEvents events
// and keep.SessionBytes bytes, and trims all sessions together to their
// newest keep.TotalBytes bytes, oldest first across sessions. It returns the
// ids of the sessions it deleted.
//
// Events only ever go from the oldest end (lowest id, which is also the
// lowest seq of each stream), so what a stream keeps is always its newest
// events without a gap, and EventsAfter from a dropped id starts past it.
// A stream remembers how far it was purged, so its numbering never restarts.
//
// It takes the write lock for one bounded step at a time, so the hub's
// batched writes, which hold events back from the wire until committed,
// never wait for a whole sweep. The figures that decide what goes are read
// without the lock, from the events_session index.
func (s *Store) Sweep(idleBefore time.Time, keep Retention) ([]string, error) {
	expired, err := s.expire(idleBefore)
	if err != nil {
		return expired, err
	}
	if !keep.Before.IsZero() {
		if err := s.dropStoredBefore(keep.Before.UnixNano()); err != nil {
			return expired, err
		}
	}
	if keep.SessionEvents > 0 || keep.SessionBytes > 0 {
		maxEvents, maxBytes := keep.SessionEvents, keep.SessionBytes
		if maxEvents <= 0 {
			maxEvents = math.MaxInt
		}
		if maxBytes <= 0 {
			maxBytes = math.MaxInt64
		}
		if err := s.trimSessions(maxEvents, maxBytes); err != nil {
			return expired, err
		}
	}
	if keep.TotalBytes > 0 {
		if err := s.trimTotal(keep.TotalBytes); err != nil {
			return expired, err
		}
	}
	return expired, nil
}

// repeat runs step under the write lock until it reports nothing more.
func (s *Store) repeat(step func() (more bool, err error)) error {
	for {
		s.wmu.Lock()
		more, err := step()
		s.wmu.Unlock()
		if err != nil || !more {
			return err
		}
	}
}

// expire deletes the sessions last seen before idleBefore, a few at a time.
func (s *Store) expire(idleBefore time.Time) ([]string, error) {
	var expired []string
	err := s.repeat(func() (bool, error) {
		tx, err := s.db.Begin()
		if err != nil {
			return false, fmt.Errorf("store: %w", err)
		}
		defer tx.Rollback()
		// Only this replica's sessions (and those no replica owns): another
		// replica keeps its own sessions' last use current.
		who := s.identity()
		rows, err := tx.Query(s.dialect.q(`DELETE FROM sessions WHERE id IN
			(SELECT id FROM sessions WHERE last_seen < ? AND ((owner = ? AND owner_gen = ?) OR owner = '') LIMIT ?) RETURNING id`),
			idleBefore.UnixNano(), who.name, who.gen, stepSessions)
		if err != nil {
			return false, fmt.Errorf("store: %w", err)
		}
		n := 0
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return false, fmt.Errorf("store: %w", err)
			}
			expired = append(expired, id)
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, fmt.Errorf("store: %w", err)
		}
		if err := tx.Commit(); err != nil {
			expired = expired[:len(expired)-n]
			return false, fmt.Errorf("store: %w", err)
		}
		return n == stepSessions, nil
	})
	return expired, err
}

// dropStoredBefore drops the events stored before a time (unix ns). Events
// are walked in id order, which is the order they were stored in, and the
// walk stops at the first newer one: a clock that stepped back may keep an
// older event a little longer, but never punches a hole in a stream.
func (s *Store) dropStoredBefore(before int64) error {
	return s.repeat(func() (bool, error) {
		_, more, err := s.dropOldest(`SELECT id, size, stored FROM events ORDER BY id`, nil, "",
			func(_ int, _ int64, stored int64) bool { return stored < before })
		return more, err
	})
}

// trimSessions trims every session over a budget to its newest events.
func (s *Store) trimSessions(maxEvents int, maxBytes int64) error {
	s.hmu.RLock()
	over, err := s.strings(`SELECT session_id FROM events GROUP BY session_id
		HAVING COUNT(*) > ? OR SUM(size) > ?`, maxEvents, maxBytes)
	s.hmu.RUnlock()
	if err != nil {
		return err
	}
	for _, id := range over {
		err := s.repeat(func() (bool, error) {
			n, b, err := s.counts(id)
			if err != nil {
				return false, err
			}
			overN, overB := n-maxEvents, b-maxBytes
			if overN <= 0 && overB <= 0 {
				return false, nil
			}
			_, more, err := s.dropOldest(`SELECT id, size, 0 FROM events WHERE session_id = ? ORDER BY id`, []any{id}, id,
				func(dn int, db int64, _ int64) bool { return dn < overN || db < overB })
			return more, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// trimTotal trims all sessions together to their newest limit bytes. The
// total is read without the write lock; if a session was deleted since,
// the figure is stale (dropping by it would drop too much), so it is read
// again, a few times at most before the next sweep takes over.
func (s *Store) trimTotal(limit int64) error {
	for range 3 {
		seen := s.shrunk.Load()
		s.hmu.RLock()
		var total int64
		err := s.db.QueryRow(`SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM events`).Scan(&total)
		s.hmu.RUnlock()
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		stale, err := s.dropExcess(total-limit, seen)
		if err != nil || !stale {
			return err
		}
	}
	return nil
}

// dropExcess drops the oldest excess bytes across sessions, measured when
// s.shrunk was seen; it stops, reporting stale, once a delete since then
// has made that figure too big.
func (s *Store) dropExcess(excess int64, seen uint64) (stale bool, err error) {
	err = s.repeat(func() (bool, error) {
		if excess <= 0 {
			return false, nil
		}
		if stale = s.shrunk.Load() != seen; stale {
			return false, nil
		}
		dropped, _, err := s.dropOldest(`SELECT id, size, 0 FROM events ORDER BY id`, nil, "",
			func(_ int, db int64, _ int64) bool { return db < excess })
		excess -= dropped
		return dropped > 0, err
	})
	return stale, err
}

// dropOldest deletes oldest-first the events that query yields (id, size,
// stored, in id order) while drop, given the count and bytes dropped so far
// and the next event's stored time, wants the next one, at most one step's
// worth. session scopes the delete ("" for all sessions). It reports the
// bytes dropped and whether it stopped at the step's limit with drop still
// wanting more. The caller holds the write lock.
func (s *Store) dropOldest(query string, args []any, session string, drop func(n int, b int64, stored int64) bool) (dropped int64, more bool, err error) {
	// No step reads past its stepEvents+1'th event: PostgreSQL would
	// send the rest of the table to a reader that stops early.
	rows, err := s.db.Query(s.dialect.q(query+` LIMIT ?`), append(args, stepEvents+1)...)
	if err != nil {
		return 0, false, fmt.Errorf("store: %w", err)
	}
	cut, n := int64(-1), 0
	for rows.Next() {
		var id, size, stored int64
		if err := rows.Scan(&id, &size, &stored); err != nil {
			rows.Close()
			return 0, false, fmt.Errorf("store: %w", err)
		}
		if !drop(n, dropped, stored) {
			break
		}
		if n >= stepEvents || dropped >= stepBytes {
			more = true
			break
		}
		cut, n, dropped = id, n+1, dropped+size
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, false, fmt.Errorf("store: %w", err)
	}
	if cut < 0 {
		return 0, false, nil
	}
	if err := s.purgeThrough(session, cut); err != nil {
		return 0, false, err
	}
	return dropped, more, nil
}

// purgeThrough deletes the events with id <= cut, of one session or of all
// (""), first raising each stream's floor_seq past the events it loses, so
// its next seq stays past every event it ever had even when none is left.
func (s *Store) purgeThrough(session string, cut int64) error {
	scope, args := `id <= ?`, []any{cut}
	if session != "" {
		scope, args = `session_id = ? AND id <= ?`, []any{session, cut}
	}
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(s.dialect.q(`UPDATE streams SET floor_seq = CASE WHEN p.next > floor_seq THEN p.next ELSE floor_seq END
		FROM (SELECT stream_id, MAX(seq) + 1 AS next FROM events WHERE `+scope+` GROUP BY stream_id) AS p
		WHERE streams.id = p.stream_id`), args...); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if _, err := tx.Exec(s.dialect.q(`DELETE FROM events WHERE `+scope), args...); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}
