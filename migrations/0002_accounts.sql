-- Accounts: login sessions, membership ids, MFA placeholder, the mail log, API key ownership.

-- Server-side record of each login, so logout, password changes and blocking end sessions at once.
CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    ip           TEXT,
    user_agent   TEXT,
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    expires_at   TEXT NOT NULL,
    revoked_at   TEXT
);
CREATE INDEX sessions_user ON sessions(user_id);

-- Memberships get their own id for the /admin/members/:id routes.
ALTER TABLE memberships ADD COLUMN id TEXT;
UPDATE memberships SET id = lower(
    hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' ||
    substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)));
CREATE UNIQUE INDEX memberships_id ON memberships(id);

-- MFA arrives in a later issue; login already asks this flag.
ALTER TABLE users ADD COLUMN mfa_enabled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN mfa_enrolled_at TEXT;

-- Every mail the hub sends or would send (bodies are not kept: they may carry tokens).
CREATE TABLE mail_log (
    id         INTEGER PRIMARY KEY,
    recipient  TEXT NOT NULL,
    subject    TEXT NOT NULL,
    kind       TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('sent', 'failed', 'dropped')),
    error      TEXT,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX mail_log_time ON mail_log(created_at);
