-- The service registry (SPEC 2.21) shared by every process on one data dir: `full`, or an `api`
-- and a `dispatcher` in split mode. Each process upserts its own row every 10 s with
-- expires_at = now + 30 s; readers skip expired rows and the registry task deletes them. The key
-- is the SPEC's `{prefix}:registry:{service}:{instanceId}`; `info` is the entry as JSON
-- (version, uptime, memory, IP, per-worker counters, broker counters).
CREATE TABLE service_registry (
    key         TEXT PRIMARY KEY,
    service     TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    info        TEXT NOT NULL,
    seen_at     TEXT NOT NULL,
    expires_at  TEXT NOT NULL
) WITHOUT ROWID;
