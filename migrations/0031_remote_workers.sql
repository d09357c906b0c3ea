-- Issue 49: inference workers on other machines. Each has its own credential (minted by a
-- platform admin, kept as the SHA-256 of its secret like satellites' MQTT passwords), and a job
-- offered to the worker group carries a lease deadline after which it goes back to the queue.
CREATE TABLE worker_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    secret_hash  TEXT NOT NULL,
    created_by   TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at   TEXT NOT NULL,
    last_seen_at TEXT,
    machine      TEXT,
    revoked_at   TEXT
);

ALTER TABLE inference_jobs ADD COLUMN lease_until TEXT;
