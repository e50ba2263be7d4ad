-- Downstream sessions: one row per client session of /mcp or /{server}/mcp.
CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    endpoint     TEXT NOT NULL,
    version      TEXT NOT NULL,
    client_info  BLOB,
    capabilities BLOB,
    log_level    TEXT NOT NULL DEFAULT '',
    created      INTEGER NOT NULL,
    last_seen    INTEGER NOT NULL
);

CREATE TABLE subscriptions (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    uri        TEXT NOT NULL,
    PRIMARY KEY (session_id, uri)
);

-- SSE streams: the reply stream of one POST, or a standalone GET stream.
-- request_id is the client's JSON-RPC id of a POST stream's request, so a
-- request that was in flight when mcphub died can still be answered.
CREATE TABLE streams (
    id         TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    post       INTEGER NOT NULL,
    request_id TEXT NOT NULL DEFAULT '',
    finished   INTEGER NOT NULL DEFAULT 0,
    -- seqs below floor_seq were purged; a stream's next seq never goes back
    floor_seq  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX streams_session ON streams(session_id);

-- Every SSE event, written before its bytes go on the wire.
-- id orders events across streams, so retention can purge the oldest.
CREATE TABLE events (
    id         INTEGER PRIMARY KEY,
    stream_id  TEXT NOT NULL REFERENCES streams(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    data       BLOB,
    UNIQUE (stream_id, seq)
);
CREATE INDEX events_session ON events(session_id, id);

-- Where a POST stream's request went upstream, so that after a restart an
-- upstream that can resume its own stream still delivers the result.
CREATE TABLE calls (
    stream_id      TEXT PRIMARY KEY REFERENCES streams(id) ON DELETE CASCADE,
    server         TEXT NOT NULL,
    upstream_id    TEXT NOT NULL,
    hub_token      TEXT NOT NULL DEFAULT '',
    progress_token TEXT NOT NULL DEFAULT ''
);

-- Upstream connection state (session id, last event ids), per server.
CREATE TABLE upstreams (
    server  TEXT PRIMARY KEY,
    state   BLOB NOT NULL,
    updated INTEGER NOT NULL
);

-- The last known initialize result and lists of each server.
CREATE TABLE catalog (
    server  TEXT NOT NULL,
    method  TEXT NOT NULL,
    items   BLOB NOT NULL,
    PRIMARY KEY (server, method)
);
