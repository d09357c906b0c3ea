-- birdhub initial schema.
-- Identifiers are UUID strings; timestamps are ISO 8601 UTC text with milliseconds
-- ("2026-11-21T17:05:19.123Z"), which sort correctly as text.
-- A shipped migration is never edited: add a new numbered file instead.

CREATE TABLE tenants (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    owner_user_id TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TABLE users (
    id                    TEXT PRIMARY KEY,
    email                 TEXT NOT NULL COLLATE NOCASE UNIQUE,
    name                  TEXT NOT NULL,
    password_hash         TEXT NOT NULL,
    is_platform_admin     INTEGER NOT NULL DEFAULT 0 CHECK (is_platform_admin IN (0, 1)),
    is_blocked            INTEGER NOT NULL DEFAULT 0 CHECK (is_blocked IN (0, 1)),
    failed_login_attempts INTEGER NOT NULL DEFAULT 0,
    locked_until          TEXT,
    last_login_at         TEXT,
    last_login_ip         TEXT,
    default_tenant_id     TEXT REFERENCES tenants(id) ON DELETE SET NULL,
    preferences_json      TEXT NOT NULL DEFAULT '{}',
    created_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TABLE memberships (
    tenant_id  TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('viewer', 'member', 'admin')),
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (tenant_id, user_id)
);
CREATE INDEX memberships_user ON memberships(user_id);

CREATE TABLE satellites (
    id                    TEXT PRIMARY KEY,
    tenant_id             TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name                  TEXT NOT NULL,
    device_id             TEXT,
    kind                  TEXT NOT NULL DEFAULT 'satellite' CHECK (kind IN ('satellite', 'mobile')),
    registered_by         TEXT REFERENCES users(id) ON DELETE SET NULL,
    mqtt_password_hash    TEXT NOT NULL,
    latitude              REAL,
    longitude             REAL,
    last_seen_at          TEXT,
    heartbeat_state       TEXT CHECK (heartbeat_state IN ('recording', 'paused', 'scheduled_off', 'error')),
    noise_floor_rms       REAL,
    version               TEXT,
    stream                TEXT CHECK (stream IN ('satellite', 'mobile')),
    update_status         TEXT,
    target_version        TEXT,
    is_online             INTEGER NOT NULL DEFAULT 0,
    config_locked         INTEGER NOT NULL DEFAULT 0 CHECK (config_locked IN (0, 1)),
    overrides_json        TEXT NOT NULL DEFAULT '{}',
    recording_profile_json TEXT,
    created_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX satellites_tenant_name ON satellites(tenant_id, name);
CREATE UNIQUE INDEX satellites_tenant_device ON satellites(tenant_id, device_id) WHERE device_id IS NOT NULL;
CREATE INDEX satellites_registered_by ON satellites(registered_by);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    satellite_id TEXT REFERENCES satellites(id) ON DELETE CASCADE,
    created_by   TEXT REFERENCES users(id) ON DELETE SET NULL,
    name         TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    key_prefix   TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('viewer', 'member', 'admin')),
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    last_used_at TEXT,
    expires_at   TEXT,
    revoked_at   TEXT
);
CREATE INDEX api_keys_tenant ON api_keys(tenant_id);
CREATE INDEX api_keys_satellite ON api_keys(satellite_id);

CREATE TABLE audio_chunks (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    satellite_id TEXT NOT NULL REFERENCES satellites(id) ON DELETE CASCADE,
    recorded_at  TEXT NOT NULL,
    duration_ms  INTEGER NOT NULL,
    sample_rate  INTEGER NOT NULL,
    latitude     REAL,
    longitude    REAL,
    storage_key  TEXT NOT NULL,
    size_bytes   INTEGER NOT NULL,
    received_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX audio_chunks_tenant_time ON audio_chunks(tenant_id, recorded_at);
CREATE INDEX audio_chunks_satellite_time ON audio_chunks(satellite_id, recorded_at);

CREATE TABLE inference_jobs (
    id          TEXT PRIMARY KEY,
    chunk_id    TEXT NOT NULL UNIQUE REFERENCES audio_chunks(id) ON DELETE CASCADE,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    status      TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'failed')),
    attempts    INTEGER NOT NULL DEFAULT 0,
    run_after   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    claimed_at  TEXT,
    worker_id   TEXT,
    error       TEXT,
    duration_ms INTEGER,
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    finished_at TEXT
);
CREATE INDEX inference_jobs_claim ON inference_jobs(status, run_after);
CREATE INDEX inference_jobs_finished ON inference_jobs(finished_at);

CREATE TABLE detections (
    id                  TEXT PRIMARY KEY,
    tenant_id           TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    satellite_id        TEXT NOT NULL REFERENCES satellites(id) ON DELETE CASCADE,
    audio_chunk_id      TEXT NOT NULL REFERENCES audio_chunks(id) ON DELETE CASCADE,
    model_id            TEXT NOT NULL,
    species_code        TEXT NOT NULL,
    scientific_name     TEXT NOT NULL,
    common_name         TEXT NOT NULL,
    confidence          REAL NOT NULL,
    detected_at         TEXT NOT NULL,
    start_ms            INTEGER NOT NULL DEFAULT 0,
    end_ms              INTEGER NOT NULL DEFAULT 3000,
    is_rare             INTEGER NOT NULL DEFAULT 0,
    rare_reason         TEXT,
    is_first_of_day     INTEGER NOT NULL DEFAULT 0,
    is_first_of_season  INTEGER NOT NULL DEFAULT 0,
    expected_here       INTEGER,
    verification_status TEXT NOT NULL DEFAULT 'unverified'
        CHECK (verification_status IN ('pending_review', 'confirmed', 'rejected', 'unverified')),
    created_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
-- The list queries of SPEC 4.2: newest first per tenant, by species, by status, by confidence.
CREATE INDEX detections_tenant_time ON detections(tenant_id, detected_at);
CREATE INDEX detections_tenant_species_time ON detections(tenant_id, species_code, detected_at);
CREATE INDEX detections_tenant_status_time ON detections(tenant_id, verification_status, detected_at);
CREATE INDEX detections_tenant_confidence ON detections(tenant_id, confidence);
CREATE INDEX detections_satellite_time ON detections(satellite_id, detected_at);
CREATE INDEX detections_chunk ON detections(audio_chunk_id);

CREATE TABLE verification_votes (
    id            TEXT PRIMARY KEY,
    detection_id  TEXT NOT NULL REFERENCES detections(id) ON DELETE CASCADE,
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    vote          TEXT NOT NULL,
    annotation_id TEXT REFERENCES annotations(id) ON DELETE SET NULL,
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (detection_id, user_id)
);
CREATE INDEX verification_votes_user ON verification_votes(user_id);

CREATE TABLE comments (
    id           TEXT PRIMARY KEY,
    detection_id TEXT NOT NULL REFERENCES detections(id) ON DELETE CASCADE,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    user_id      TEXT REFERENCES users(id) ON DELETE SET NULL,
    body         TEXT NOT NULL,
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX comments_detection ON comments(detection_id, created_at);

CREATE TABLE annotations (
    id            TEXT PRIMARY KEY,
    detection_id  TEXT NOT NULL REFERENCES detections(id) ON DELETE CASCADE,
    tenant_id     TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    user_id       TEXT REFERENCES users(id) ON DELETE SET NULL,
    vote          TEXT NOT NULL,
    time_start_ms INTEGER NOT NULL,
    time_end_ms   INTEGER NOT NULL,
    freq_low_hz   REAL,
    freq_high_hz  REAL,
    notes         TEXT,
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX annotations_detection ON annotations(detection_id, created_at);

CREATE TABLE alert_channels (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    type             TEXT NOT NULL CHECK (type IN ('email', 'webhook', 'chat_block', 'chat_bot', 'chat_card', 'chat_embed')),
    name             TEXT NOT NULL,
    config_json      TEXT NOT NULL DEFAULT '{}',
    -- Write-only secrets (webhook signing secret), encrypted with MFA_ENCRYPTION_KEY.
    secret_enc       TEXT,
    payload_template TEXT,
    enabled          INTEGER NOT NULL DEFAULT 1,
    created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX alert_channels_tenant ON alert_channels(tenant_id);

CREATE TABLE alert_rules (
    id               TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    trigger_type     TEXT NOT NULL CHECK (trigger_type IN ('detection', 'absence', 'trend')),
    system_key       TEXT,
    conditions_json  TEXT NOT NULL DEFAULT '{}',
    channel_ids_json TEXT NOT NULL DEFAULT '[]',
    enabled          INTEGER NOT NULL DEFAULT 1,
    cooldown_minutes INTEGER NOT NULL DEFAULT 0,
    last_fired_at    TEXT,
    created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX alert_rules_tenant ON alert_rules(tenant_id);
CREATE UNIQUE INDEX alert_rules_system ON alert_rules(tenant_id, system_key) WHERE system_key IS NOT NULL;

CREATE TABLE alerts (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    rule_id         TEXT REFERENCES alert_rules(id) ON DELETE SET NULL,
    type            TEXT NOT NULL,
    title           TEXT NOT NULL,
    message         TEXT NOT NULL,
    data_json       TEXT NOT NULL DEFAULT '{}',
    acknowledged    INTEGER NOT NULL DEFAULT 0 CHECK (acknowledged IN (0, 1)),
    acknowledged_by TEXT REFERENCES users(id) ON DELETE SET NULL,
    acknowledged_at TEXT,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX alerts_tenant_ack_time ON alerts(tenant_id, acknowledged, created_at);

CREATE TABLE scheduled_exports (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    format       TEXT NOT NULL CHECK (format IN ('csv', 'json', 'checklist', 'observation')),
    cron         TEXT NOT NULL,
    channel_id   TEXT REFERENCES alert_channels(id) ON DELETE SET NULL,
    filters_json TEXT NOT NULL DEFAULT '{}',
    enabled      INTEGER NOT NULL DEFAULT 1,
    last_run_at  TEXT,
    next_run_at  TEXT,
    last_status  TEXT,
    last_error   TEXT,
    created_by   TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX scheduled_exports_due ON scheduled_exports(enabled, next_run_at);

CREATE TABLE invites (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    role        TEXT NOT NULL CHECK (role IN ('viewer', 'member', 'admin')),
    email       TEXT COLLATE NOCASE,
    token_hash  TEXT NOT NULL UNIQUE,
    created_by  TEXT REFERENCES users(id) ON DELETE SET NULL,
    expires_at  TEXT NOT NULL,
    accepted_at TEXT,
    accepted_by TEXT REFERENCES users(id) ON DELETE SET NULL,
    revoked_at  TEXT,
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX invites_tenant ON invites(tenant_id, created_at);

CREATE TABLE password_reset_tokens (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    expires_at TEXT NOT NULL,
    used_at    TEXT,
    request_ip TEXT,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX password_reset_tokens_user ON password_reset_tokens(user_id);

-- The per-IP ledger behind the login and forgot-password rate limits.
CREATE TABLE login_attempts (
    id         INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('login', 'forgot_password')),
    ip         TEXT NOT NULL,
    email      TEXT,
    success    INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX login_attempts_ip ON login_attempts(kind, ip, created_at);

CREATE TABLE audit_log (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id        TEXT,
    actor_user_id    TEXT,
    actor_api_key_id TEXT,
    action           TEXT NOT NULL,
    target_type      TEXT,
    target_id        TEXT,
    ip               TEXT,
    details_json     TEXT NOT NULL DEFAULT '{}',
    created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX audit_log_time ON audit_log(created_at);
CREATE INDEX audit_log_tenant_time ON audit_log(tenant_id, created_at);

-- Key/value settings. scope is 'platform' or a tenant id; values are JSON.
CREATE TABLE settings (
    scope      TEXT NOT NULL,
    key        TEXT NOT NULL,
    value_json TEXT NOT NULL,
    updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (scope, key)
);

CREATE TABLE mobile_releases (
    id           TEXT PRIMARY KEY,
    version      TEXT NOT NULL UNIQUE,
    notes        TEXT,
    force_update INTEGER NOT NULL DEFAULT 0 CHECK (force_update IN (0, 1)),
    storage_key  TEXT NOT NULL,
    file_size    INTEGER NOT NULL,
    sha256       TEXT NOT NULL,
    uploaded_by  TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX mobile_releases_time ON mobile_releases(created_at);

-- Isotonic calibration per (tenant, model): raw-confidence bucket -> calibrated probability.
CREATE TABLE calibration_buckets (
    tenant_id    TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    model_id     TEXT NOT NULL,
    bucket_index INTEGER NOT NULL,
    lower_bound  REAL NOT NULL,
    upper_bound  REAL NOT NULL,
    calibrated   REAL NOT NULL,
    sample_count INTEGER NOT NULL,
    updated_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (tenant_id, model_id, bucket_index)
);
