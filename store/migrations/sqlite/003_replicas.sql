-- Replicas of a team hub share one database (PostgreSQL); on SQLite these
-- columns keep their defaults: one hub, owner "" of generation 0.

-- Each replica, by its stable name: where others forward to it, its
-- generation (raised at each start, and by the replica that takes over its
-- sessions when its heartbeat stops: the fence), and its heartbeat by the
-- database's clock (unix nanoseconds).
CREATE TABLE replicas (
    name       TEXT PRIMARY KEY,
    address    TEXT NOT NULL,
    generation INTEGER NOT NULL,
    started    INTEGER NOT NULL,
    heartbeat  INTEGER NOT NULL,
    registry   TEXT NOT NULL DEFAULT '',
    version    TEXT NOT NULL DEFAULT ''
);

-- The secret replicas authenticate forwarded requests with: made by the
-- first replica, read by the others. Whoever reads this database is
-- trusted with the cluster anyway.
CREATE TABLE cluster (
    one    INTEGER PRIMARY KEY CHECK (one = 1),
    secret TEXT NOT NULL
);

-- Which replica (and which of its generations) holds a session; every
-- write for the session is refused to any other. taken_from names the
-- replica it was taken over from, whose upstream sessions finish its calls.
ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN owner_gen INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN taken_from TEXT NOT NULL DEFAULT '';
CREATE INDEX sessions_owner ON sessions(owner, owner_gen);

-- Upstream connection state is each replica's own: every replica has its
-- own connection (and upstream session) to each server.
CREATE TABLE upstreams_by_replica (
    replica TEXT NOT NULL DEFAULT '',
    server  TEXT NOT NULL,
    state   BLOB NOT NULL,
    updated INTEGER NOT NULL,
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
    generation INTEGER NOT NULL
);
