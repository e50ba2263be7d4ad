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
package store
