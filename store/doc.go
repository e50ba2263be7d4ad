// Package store keeps mcphub's durable state: downstream sessions, their SSE
// streams and every event written to them, upstream session ids and last
// event ids, and the cached merged catalog. It carries embedded, versioned
// migrations and the retention sweeper, so that a client resumes with
// Last-Event-ID after a dropped stream or a hub restart.
//
// The database is SQLite in the data directory by default (modernc.org/sqlite,
// no cgo), or PostgreSQL for a team hub (github.com/jackc/pgx/v5, chosen by a
// postgres:// URL). Both run the same code over database/sql: the queries are
// written once in the SQL both accept, and each dialect has its own folder of
// migrations, numbered alike, making the same tables and columns.
//
// On PostgreSQL the replicas of a team hub share the store (cluster.go):
// each session is owned by one replica and generation, every write for it
// guarded by that owner; replicas beat in the replicas table, take over the
// sessions of one whose heartbeat stops (fencing it), and tell each other of
// changes on a LISTEN/NOTIFY channel.
package store
