-- Alert delivery (SPEC 4.6, issue 12): a durable outbox of deliveries, committed in the same
-- transaction as the alert that caused them, and the cooldown ledger that keeps a burst of
-- detections to one alert per rule, satellite and species.

-- One delivery of one alert to one channel. `body` is rendered when the alert fires, so every
-- retry sends the same bytes (and the same signature); the URL and secrets are read from the
-- channel at send time and never copied here.
CREATE TABLE alert_deliveries (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    channel_id      TEXT NOT NULL REFERENCES alert_channels(id) ON DELETE CASCADE,
    alert_id        TEXT REFERENCES alerts(id) ON DELETE SET NULL,
    event           TEXT NOT NULL,
    content_type    TEXT NOT NULL,
    body            BLOB NOT NULL,
    -- pending: waiting for its next attempt; delivered; failed (gave up or refused);
    -- test: a test send, kept in the log only.
    status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'test')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT,
    http_status     INTEGER,
    last_error      TEXT,
    duration_ms     INTEGER,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    delivered_at    TEXT
);
CREATE INDEX alert_deliveries_due ON alert_deliveries(status, next_attempt_at);
CREATE INDEX alert_deliveries_channel ON alert_deliveries(channel_id, created_at);

-- When a rule last fired for a key (satellite and species for detection rules; the watched
-- scope for absence rules; the day for trend rules).
CREATE TABLE alert_cooldowns (
    rule_id  TEXT NOT NULL REFERENCES alert_rules(id) ON DELETE CASCADE,
    key      TEXT NOT NULL,
    fired_at TEXT NOT NULL,
    PRIMARY KEY (rule_id, key)
) WITHOUT ROWID;

-- Every team has the system rule `satellite_offline` from the start, so it can be wired to
-- channels before the first outage.
INSERT OR IGNORE INTO alert_rules (id, tenant_id, name, trigger_type, system_key, created_at, updated_at)
SELECT lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-' ||
       substr('89ab', 1 + (random() & 3), 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))),
       id, 'Satellite offline', 'absence', 'satellite_offline', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
FROM tenants;
