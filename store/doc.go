// Package store keeps mcphub's durable state in SQLite (modernc.org/sqlite, no
// cgo): downstream sessions, their SSE streams and every event written to them,
// upstream session ids and last event ids, and the cached merged catalog. It
// carries embedded, versioned migrations and the retention sweeper, so that a
// client resumes with Last-Event-ID after a dropped stream or a hub restart.
package store
