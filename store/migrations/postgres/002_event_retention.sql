-- The PostgreSQL dialect of sqlite/002_event_retention.sql.
ALTER TABLE events ADD COLUMN stored BIGINT NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN size BIGINT NOT NULL DEFAULT 0;

-- Events already stored count as stored now (see the SQLite migration).
UPDATE events SET stored = (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000)::BIGINT,
                  size = COALESCE(OCTET_LENGTH(data), 0);

-- Carrying size lets a session's figures, and the whole store's, be read
-- from this index alone.
DROP INDEX events_session;
CREATE INDEX events_session ON events(session_id, id) INCLUDE (size);
