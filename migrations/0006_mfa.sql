-- Multi-factor sign-in (SPEC 4.1 MFA rows, 5.3.4-5.3.5): a TOTP secret per person (encrypted with
-- MFA_ENCRYPTION_KEY, AES-256-GCM, fresh nonce per value), single-use backup codes (SHA-256),
-- passkeys (the credential as webauthn-rs serialises it) and remembered devices (SHA-256 of the
-- cookie). Everything goes with the account.
CREATE TABLE mfa_totp (
    user_id     TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret_enc  TEXT NOT NULL,
    -- The last TOTP step accepted: a code is refused when its step is not newer (no replay).
    last_step   INTEGER,
    created_at  TEXT NOT NULL
);

CREATE TABLE mfa_backup_codes (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash   TEXT NOT NULL,
    used_at     TEXT,
    created_at  TEXT NOT NULL
);
CREATE INDEX mfa_backup_codes_user ON mfa_backup_codes (user_id);

CREATE TABLE mfa_passkeys (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    credential_id   TEXT NOT NULL UNIQUE,
    credential_json TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    last_used_at    TEXT
);
CREATE INDEX mfa_passkeys_user ON mfa_passkeys (user_id);

CREATE TABLE mfa_remembered_devices (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash   TEXT NOT NULL UNIQUE,
    user_agent   TEXT,
    ip           TEXT,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    last_used_at TEXT
);
CREATE INDEX mfa_remembered_devices_user ON mfa_remembered_devices (user_id);

-- One value encrypted at first use, so a hub started with another MFA_ENCRYPTION_KEY notices at
-- once instead of failing every code (it is never re-encrypted under a new key silently).
CREATE TABLE mfa_key_check (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    value_enc  TEXT NOT NULL,
    created_at TEXT NOT NULL
);
