-- When each event was stored (unix nanoseconds) and its size in bytes, so
-- retention drops events by age and by bytes without reading their data.
ALTER TABLE events ADD COLUMN stored INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN size INTEGER NOT NULL DEFAULT 0;

-- When the events already stored were written is not known. They count as
-- stored now: dating them to the epoch would purge every one at the first
-- sweep after an upgrade, and with them the resumes a restart must keep.
UPDATE events SET stored = CAST(unixepoch('subsec') * 1000000000 AS INTEGER),
                  size = COALESCE(LENGTH(data), 0);

-- Carrying size lets a session's figures, and the whole store's, be read
-- from this index alone.
DROP INDEX events_session;
CREATE INDEX events_session ON events(session_id, id, size);
