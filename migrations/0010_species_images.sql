-- Species images (SPEC 4.9): one row per species the hub was asked to show a picture of. Images
-- are hub-wide, not per team: a robin looks the same to everyone. The bytes live in the object
-- store under `object_key`; this row holds what is known about them and the fetcher's schedule.
CREATE TABLE species_images (
    species_code    TEXT PRIMARY KEY,
    scientific_name TEXT NOT NULL,
    -- queued: waiting for its first (or an admin-requested) download; fetching: a fetcher holds it
    -- until next_attempt_at (its lease); cached: stored; failed: the last attempt failed, retried at
    -- next_attempt_at (NULL once the fetcher gave up); none: the source has no image.
    status          TEXT NOT NULL CHECK (status IN ('queued', 'fetching', 'cached', 'failed', 'none')),
    object_key      TEXT,
    content_type    TEXT,
    bytes           INTEGER,
    -- Hex SHA-256 of the stored bytes: the proxy's ETag.
    sha256          TEXT,
    attribution     TEXT,
    license         TEXT,
    source_page     TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT,
    last_error      TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX species_images_due ON species_images(status, next_attempt_at);
