-- The PostgreSQL dialect of sqlite/003_replicas.sql.
CREATE TABLE replicas (
    name       TEXT PRIMARY KEY,
    address    TEXT NOT NULL,
    generation BIGINT NOT NULL,
    started    BIGINT NOT NULL,
    heartbeat  BIGINT NOT NULL,
    registry   TEXT NOT NULL DEFAULT '',
    version    TEXT NOT NULL DEFAULT ''
);

CREATE TABLE cluster (
    one    INTEGER PRIMARY KEY CHECK (one = 1),
    secret TEXT NOT NULL
);

ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN owner_gen BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN taken_from TEXT NOT NULL DEFAULT '';
CREATE INDEX sessions_owner ON sessions(owner, owner_gen);

CREATE TABLE upstreams_by_replica (
    replica TEXT NOT NULL DEFAULT '',
    server  TEXT NOT NULL,
    state   BYTEA NOT NULL,
    updated BIGINT NOT NULL,
    PRIMARY KEY (replica, server)
);
INSERT INTO upstreams_by_replica (replica, server, state, updated) SELECT '', server, state, updated FROM upstreams;
DROP TABLE upstreams;
ALTER TABLE upstreams_by_replica RENAME TO upstreams;

-- The replica (and its generation) that runs each replicas = "one" server's
-- process; the others reach the server through it.
CREATE TABLE server_owners (
    server     TEXT PRIMARY KEY,
    replica    TEXT NOT NULL,
    generation BIGINT NOT NULL
);
