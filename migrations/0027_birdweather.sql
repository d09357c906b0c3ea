-- Issue 38: sharing a satellite's confirmed detections with BirdWeather (docs/birdweather.md).
--
-- One station per satellite: its token sealed with the hub's key (never stored in clear; only
-- its last characters are kept to be shown), whether sharing is on, the minimum confidence, and
-- the station's health (consecutive failures, a pause while they last, the last success and
-- the last error in words). Times are milliseconds since the Unix epoch (UTC).
CREATE TABLE birdweather_stations (
    satellite_pk         INTEGER PRIMARY KEY REFERENCES satellites(pk) ON DELETE CASCADE,
    token_sealed         TEXT NOT NULL,
    token_hint           TEXT NOT NULL,
    enabled              INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    min_confidence       REAL NOT NULL DEFAULT 0.7,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    paused_until         INTEGER,
    last_success_at      INTEGER,
    last_error           TEXT,
    last_error_at        INTEGER,
    updated_at           INTEGER NOT NULL
) STRICT;

-- The durable outbox: one row per detection ever queued (UNIQUE, so a detection confirmed,
-- un-confirmed and confirmed again is sent once). `soundscape_id` keeps BirdWeather's id once
-- the audio is up, so a retry posts only the detection.
CREATE TABLE birdweather_outbox (
    pk              INTEGER PRIMARY KEY,
    detection_pk    INTEGER NOT NULL UNIQUE REFERENCES detections(pk) ON DELETE CASCADE,
    satellite_pk    INTEGER NOT NULL REFERENCES satellites(pk) ON DELETE CASCADE,
    status          TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'skipped', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    soundscape_id   TEXT,
    http_status     INTEGER,
    reason          TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX birdweather_outbox_due ON birdweather_outbox(status, next_attempt_at);
CREATE INDEX birdweather_outbox_satellite ON birdweather_outbox(satellite_pk, status, updated_at);

-- A detection is queued at the moment it becomes confirmed (a vote, an annotation, an admin's
-- decision: every path ends in this UPDATE), in the same transaction, when its satellite shares
-- with BirdWeather and it reaches the station's minimum confidence. Rows written already
-- confirmed (an import of old history) never pass here. What else keeps a detection back
-- (its audio removed by the privacy filter, a non-bird label, imported history) is checked by
-- the sender, which marks the row `skipped` with the reason.
CREATE TRIGGER birdweather_enqueue AFTER UPDATE OF verification_status ON detections
WHEN NEW.verification_status = 'confirmed' AND OLD.verification_status <> 'confirmed'
BEGIN
    INSERT OR IGNORE INTO birdweather_outbox (detection_pk, satellite_pk, next_attempt_at, created_at, updated_at)
    SELECT NEW.pk, NEW.satellite_pk, now.ms, now.ms, now.ms
    FROM birdweather_stations s, (SELECT CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER) AS ms) now
    WHERE s.satellite_pk = NEW.satellite_pk AND s.enabled = 1 AND NEW.confidence >= s.min_confidence;
END;
