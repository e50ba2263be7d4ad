-- The PostgreSQL dialect of sqlite/004_access.sql.
CREATE TABLE api_keys (
    id        TEXT PRIMARY KEY,
    name      TEXT NOT NULL,
    hash      BYTEA NOT NULL,
    profiles  TEXT NOT NULL DEFAULT '',
    rate      TEXT NOT NULL DEFAULT '',
    concurrent INTEGER NOT NULL DEFAULT 0,
    created   BIGINT NOT NULL,
    expires   BIGINT NOT NULL DEFAULT 0,
    last_used BIGINT NOT NULL DEFAULT 0,
    revoked   BIGINT NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX api_keys_live_name ON api_keys(name) WHERE revoked = 0;

CREATE TABLE hub_secrets (
    name  TEXT PRIMARY KEY,
    value BYTEA NOT NULL
);

-- Who opened each session (the hub's name for its caller: the hub token, a
-- key's name, a signed-in user's pseudonym); only they may use it.
ALTER TABLE sessions ADD COLUMN principal TEXT NOT NULL DEFAULT '';

-- A token bucket per caller (its rate limit): the tokens it had at stamp
-- (unix nanoseconds, by the database's clock on PostgreSQL, so that every
-- replica draws from the same bucket at the same pace).
CREATE TABLE rate_buckets (
    subject TEXT PRIMARY KEY,
    tokens  DOUBLE PRECISION NOT NULL,
    stamp   BIGINT NOT NULL
);

-- A team hub's OAuth grants for its remote servers, shared by every
-- replica: sealed (AES-256-GCM) under a key the operator holds, never
-- this database; by the server's canonical URL.
CREATE TABLE oauth_grants (
    key     TEXT PRIMARY KEY,
    sealed  BYTEA NOT NULL,
    updated BIGINT NOT NULL
);

-- The tool calls each caller has in progress on a team hub's replicas, for
-- its cap on calls at once: a row per call while it runs, counted only
-- while its replica beats (a replica that dies takes its calls with it).
CREATE TABLE call_slots (
    id      TEXT PRIMARY KEY,
    subject TEXT NOT NULL,
    replica TEXT NOT NULL,
    started BIGINT NOT NULL
);
CREATE INDEX call_slots_subject ON call_slots(subject);
