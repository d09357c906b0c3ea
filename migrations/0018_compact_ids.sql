-- birdhub: foreign-keys-off
-- Shorter ids and one row per species name (issue 18). After 0017 the benchmark year was
-- 1,852 MiB, and most of what was left repeated text:
--
-- * Every chunk and detection kept its UUID as 36 characters, in the row and again in the
--   unique index that finds it. They are now the UUID's 16 bytes (a BLOB). The tables that
--   point at them (`inference_jobs.chunk_id`, and `detection_id` of votes, comments and
--   annotations) hold the same 16 bytes, so their foreign keys still match. Those columns keep
--   their declared type: SQLite stores a blob in a TEXT column as it is. The API, MQTT topics
--   and storage keys still show the hyphenated text; the storage key's SQL spells it out with
--   `hex()`.
-- * Every detection carried its species code and both names (about 55 bytes), and three
--   indexes the code or the English name again. Names now live once in `species_labels`, and a
--   detection keeps its `species_pk`. A code has one row: the model's newest label for it.
--   The summaries (tenant_species, the statistics rollups) stay keyed by code; their triggers
--   read it through the key.
-- * The index that sorted detections by English name (`detections_tenant_name_time`) goes:
--   the name sort walks the team's species in name order (`tenant_species_name`, small) and
--   each species' detections by time (`detections_tenant_species_day`).
-- * The review queue's index no longer ends with `model_id`, which only the occasional
--   calibration fit read.
--
-- The runner applies this with foreign keys off (the first line asks for it), checks every
-- foreign key before it commits, and compacts the file afterwards.

CREATE TABLE species_labels (
    pk              INTEGER PRIMARY KEY,
    species_code    TEXT NOT NULL UNIQUE,
    scientific_name TEXT NOT NULL,
    common_name     TEXT NOT NULL
) STRICT;
-- The newest detection's names win where a code was stored under two.
INSERT INTO species_labels (species_code, scientific_name, common_name)
SELECT species_code, scientific_name, common_name
FROM (SELECT species_code, scientific_name, common_name, max(pk) FROM detections GROUP BY species_code)
ORDER BY species_code;

CREATE UNIQUE INDEX tenant_species_name ON tenant_species(tenant_id, common_name, species_code);

-- Triggers of other tables that name the two rebuilt tables go first (rebuilt below).
DROP TRIGGER tenants_rows_removed;
DROP TRIGGER satellites_rows_removed;
DROP TRIGGER stats_vote_added;
DROP TRIGGER stats_vote_changed;
DROP TRIGGER stats_vote_removed;

-- Audio chunks ---------------------------------------------------------------------------------

CREATE TABLE audio_chunks_short (
    pk               INTEGER PRIMARY KEY,
    -- the UUID's 16 bytes
    id               BLOB NOT NULL UNIQUE CHECK (length(id) = 16),
    tenant_pk        INTEGER NOT NULL REFERENCES tenants(pk) ON DELETE CASCADE,
    satellite_pk     INTEGER NOT NULL REFERENCES satellites(pk) ON DELETE CASCADE,
    -- milliseconds since the Unix epoch (UTC)
    recorded_at      INTEGER NOT NULL,
    duration_ms      INTEGER NOT NULL,
    sample_rate      INTEGER NOT NULL,
    latitude         REAL,
    longitude        REAL,
    storage_key      TEXT NOT NULL,
    size_bytes       INTEGER NOT NULL,
    received_at      INTEGER NOT NULL DEFAULT (CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER)),
    session_pk       INTEGER REFERENCES recording_sessions(pk) ON DELETE SET NULL,
    audio_expired_at INTEGER,
    audio_deleted    INTEGER NOT NULL DEFAULT 0 CHECK (audio_deleted IN (0, 1))
) STRICT;
INSERT INTO audio_chunks_short
SELECT pk, unhex(replace(id, '-', '')), tenant_pk, satellite_pk, recorded_at, duration_ms, sample_rate, latitude,
       longitude, storage_key, size_bytes, received_at, session_pk, audio_expired_at, audio_deleted
FROM audio_chunks
ORDER BY pk;

-- Detections -----------------------------------------------------------------------------------

CREATE TABLE detections_short (
    pk                  INTEGER PRIMARY KEY,
    -- the UUID's 16 bytes
    id                  BLOB NOT NULL UNIQUE CHECK (length(id) = 16),
    tenant_pk           INTEGER NOT NULL REFERENCES tenants(pk) ON DELETE CASCADE,
    satellite_pk        INTEGER NOT NULL REFERENCES satellites(pk) ON DELETE CASCADE,
    chunk_pk            INTEGER NOT NULL REFERENCES audio_chunks(pk) ON DELETE CASCADE,
    model_id            TEXT NOT NULL,
    species_pk          INTEGER NOT NULL REFERENCES species_labels(pk),
    confidence          REAL NOT NULL,
    -- milliseconds since the Unix epoch (UTC)
    detected_at         INTEGER NOT NULL,
    start_ms            INTEGER NOT NULL DEFAULT 0,
    end_ms              INTEGER NOT NULL DEFAULT 3000,
    is_rare             INTEGER NOT NULL DEFAULT 0,
    rare_reason         TEXT,
    is_first_of_day     INTEGER NOT NULL DEFAULT 0,
    is_first_of_season  INTEGER NOT NULL DEFAULT 0,
    expected_here       INTEGER,
    verification_status TEXT NOT NULL DEFAULT 'unverified'
        CHECK (verification_status IN ('pending_review', 'confirmed', 'rejected', 'unverified')),
    created_at          INTEGER NOT NULL DEFAULT (CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER)),
    shared_until        TEXT
) STRICT;
INSERT INTO detections_short
SELECT d.pk, unhex(replace(d.id, '-', '')), d.tenant_pk, d.satellite_pk, d.chunk_pk, d.model_id, l.pk, d.confidence,
       d.detected_at, d.start_ms, d.end_ms, d.is_rare, d.rare_reason, d.is_first_of_day, d.is_first_of_season,
       d.expected_here, d.verification_status, d.created_at, d.shared_until
FROM detections d JOIN species_labels l ON l.species_code = d.species_code
ORDER BY d.pk;

-- The rows that point at a chunk or a detection by id take the same 16 bytes.
UPDATE inference_jobs SET chunk_id = unhex(replace(chunk_id, '-', ''));
UPDATE verification_votes SET detection_id = unhex(replace(detection_id, '-', ''));
UPDATE comments SET detection_id = unhex(replace(detection_id, '-', ''));
UPDATE annotations SET detection_id = unhex(replace(detection_id, '-', ''));

DROP TABLE detections;
DROP TABLE audio_chunks;
ALTER TABLE audio_chunks_short RENAME TO audio_chunks;
ALTER TABLE detections_short RENAME TO detections;

CREATE INDEX audio_chunks_tenant_time ON audio_chunks(tenant_pk, recorded_at);
CREATE INDEX audio_chunks_satellite_time ON audio_chunks(satellite_pk, recorded_at);
CREATE INDEX audio_chunks_session ON audio_chunks(session_pk);
CREATE INDEX audio_chunks_unsessioned ON audio_chunks(satellite_pk, recorded_at) WHERE session_pk IS NULL;
CREATE INDEX audio_chunks_live_by_time ON audio_chunks(recorded_at) WHERE audio_expired_at IS NULL;
CREATE INDEX audio_chunks_expiring ON audio_chunks(id) WHERE audio_expired_at IS NOT NULL AND audio_deleted = 0;

CREATE INDEX detections_tenant_time ON detections(tenant_pk, detected_at);
CREATE INDEX detections_tenant_status_time ON detections(tenant_pk, verification_status, detected_at);
CREATE INDEX detections_tenant_confidence ON detections(tenant_pk, confidence);
CREATE INDEX detections_satellite_time ON detections(satellite_pk, detected_at);
CREATE UNIQUE INDEX detections_chunk_species ON detections(chunk_pk, species_pk);
CREATE INDEX detections_tenant_species_day ON detections(tenant_pk, species_pk, detected_at);
CREATE INDEX detections_tenant_status_confidence ON detections(tenant_pk, verification_status, confidence);

-- The triggers of 0017, reading a detection's species through its key.

CREATE TRIGGER tenants_rows_removed BEFORE DELETE ON tenants
BEGIN
    DELETE FROM audio_chunks WHERE tenant_pk = OLD.pk;
    DELETE FROM detections WHERE tenant_pk = OLD.pk;
END;

CREATE TRIGGER satellites_rows_removed BEFORE DELETE ON satellites
BEGIN
    DELETE FROM audio_chunks WHERE satellite_pk = OLD.pk;
    DELETE FROM detections WHERE satellite_pk = OLD.pk;
END;

CREATE TRIGGER detections_species_added AFTER INSERT ON detections
BEGIN
    INSERT INTO tenant_species (tenant_id, species_code, common_name, scientific_name, detection_count,
                                first_detected_at, last_detected_at)
    VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), (SELECT common_name FROM species_labels WHERE pk = NEW.species_pk), (SELECT scientific_name FROM species_labels WHERE pk = NEW.species_pk), 1,
            strftime('%Y-%m-%dT%H:%M:%fZ', NEW.detected_at / 1000.0, 'unixepoch'),
            strftime('%Y-%m-%dT%H:%M:%fZ', NEW.detected_at / 1000.0, 'unixepoch'))
    ON CONFLICT (tenant_id, species_code) DO UPDATE SET
        detection_count = detection_count + 1,
        first_detected_at = min(first_detected_at, excluded.first_detected_at),
        last_detected_at = max(last_detected_at, excluded.last_detected_at);
END;

CREATE TRIGGER detections_species_removed AFTER DELETE ON detections
BEGIN
    UPDATE tenant_species SET detection_count = detection_count - 1
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk);
    DELETE FROM tenant_species
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND detection_count <= 0;
END;

CREATE TRIGGER stats_detection_added AFTER INSERT ON detections
BEGIN
    INSERT INTO stats_daily VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000, 'unixepoch', 'localtime'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
    ON CONFLICT DO UPDATE SET n = n + 1,
        ge05 = ge05 + excluded.ge05,
        ge10 = ge10 + excluded.ge10,
        ge15 = ge15 + excluded.ge15,
        ge20 = ge20 + excluded.ge20,
        ge25 = ge25 + excluded.ge25,
        ge30 = ge30 + excluded.ge30,
        ge35 = ge35 + excluded.ge35,
        ge40 = ge40 + excluded.ge40,
        ge45 = ge45 + excluded.ge45,
        ge50 = ge50 + excluded.ge50,
        ge55 = ge55 + excluded.ge55,
        ge60 = ge60 + excluded.ge60,
        ge65 = ge65 + excluded.ge65,
        ge70 = ge70 + excluded.ge70,
        ge75 = ge75 + excluded.ge75,
        ge80 = ge80 + excluded.ge80,
        ge85 = ge85 + excluded.ge85,
        ge90 = ge90 + excluded.ge90,
        ge95 = ge95 + excluded.ge95,
        ge100 = ge100 + excluded.ge100;
    INSERT INTO stats_monthly VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), strftime('%Y-%m', NEW.detected_at / 1000, 'unixepoch', 'localtime'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
    ON CONFLICT DO UPDATE SET n = n + 1,
        ge05 = ge05 + excluded.ge05,
        ge10 = ge10 + excluded.ge10,
        ge15 = ge15 + excluded.ge15,
        ge20 = ge20 + excluded.ge20,
        ge25 = ge25 + excluded.ge25,
        ge30 = ge30 + excluded.ge30,
        ge35 = ge35 + excluded.ge35,
        ge40 = ge40 + excluded.ge40,
        ge45 = ge45 + excluded.ge45,
        ge50 = ge50 + excluded.ge50,
        ge55 = ge55 + excluded.ge55,
        ge60 = ge60 + excluded.ge60,
        ge65 = ge65 + excluded.ge65,
        ge70 = ge70 + excluded.ge70,
        ge75 = ge75 + excluded.ge75,
        ge80 = ge80 + excluded.ge80,
        ge85 = ge85 + excluded.ge85,
        ge90 = ge90 + excluded.ge90,
        ge95 = ge95 + excluded.ge95,
        ge100 = ge100 + excluded.ge100;
    INSERT INTO stats_hourly VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000, 'unixepoch', 'localtime'), CAST(strftime('%H', NEW.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
    ON CONFLICT DO UPDATE SET n = n + 1,
        ge05 = ge05 + excluded.ge05,
        ge10 = ge10 + excluded.ge10,
        ge15 = ge15 + excluded.ge15,
        ge20 = ge20 + excluded.ge20,
        ge25 = ge25 + excluded.ge25,
        ge30 = ge30 + excluded.ge30,
        ge35 = ge35 + excluded.ge35,
        ge40 = ge40 + excluded.ge40,
        ge45 = ge45 + excluded.ge45,
        ge50 = ge50 + excluded.ge50,
        ge55 = ge55 + excluded.ge55,
        ge60 = ge60 + excluded.ge60,
        ge65 = ge65 + excluded.ge65,
        ge70 = ge70 + excluded.ge70,
        ge75 = ge75 + excluded.ge75,
        ge80 = ge80 + excluded.ge80,
        ge85 = ge85 + excluded.ge85,
        ge90 = ge90 + excluded.ge90,
        ge95 = ge95 + excluded.ge95,
        ge100 = ge100 + excluded.ge100;
    INSERT INTO stats_day_species VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000, 'unixepoch', 'localtime'), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
    ON CONFLICT DO UPDATE SET n = n + 1,
        ge05 = ge05 + excluded.ge05,
        ge10 = ge10 + excluded.ge10,
        ge15 = ge15 + excluded.ge15,
        ge20 = ge20 + excluded.ge20,
        ge25 = ge25 + excluded.ge25,
        ge30 = ge30 + excluded.ge30,
        ge35 = ge35 + excluded.ge35,
        ge40 = ge40 + excluded.ge40,
        ge45 = ge45 + excluded.ge45,
        ge50 = ge50 + excluded.ge50,
        ge55 = ge55 + excluded.ge55,
        ge60 = ge60 + excluded.ge60,
        ge65 = ge65 + excluded.ge65,
        ge70 = ge70 + excluded.ge70,
        ge75 = ge75 + excluded.ge75,
        ge80 = ge80 + excluded.ge80,
        ge85 = ge85 + excluded.ge85,
        ge90 = ge90 + excluded.ge90,
        ge95 = ge95 + excluded.ge95,
        ge100 = ge100 + excluded.ge100;
    INSERT INTO stats_species_hourly VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), date(NEW.detected_at / 1000, 'unixepoch', 'localtime'), CAST(strftime('%H', NEW.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER), 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
    ON CONFLICT DO UPDATE SET n = n + 1,
        ge05 = ge05 + excluded.ge05,
        ge10 = ge10 + excluded.ge10,
        ge15 = ge15 + excluded.ge15,
        ge20 = ge20 + excluded.ge20,
        ge25 = ge25 + excluded.ge25,
        ge30 = ge30 + excluded.ge30,
        ge35 = ge35 + excluded.ge35,
        ge40 = ge40 + excluded.ge40,
        ge45 = ge45 + excluded.ge45,
        ge50 = ge50 + excluded.ge50,
        ge55 = ge55 + excluded.ge55,
        ge60 = ge60 + excluded.ge60,
        ge65 = ge65 + excluded.ge65,
        ge70 = ge70 + excluded.ge70,
        ge75 = ge75 + excluded.ge75,
        ge80 = ge80 + excluded.ge80,
        ge85 = ge85 + excluded.ge85,
        ge90 = ge90 + excluded.ge90,
        ge95 = ge95 + excluded.ge95,
        ge100 = ge100 + excluded.ge100;
    INSERT INTO stats_verdicts SELECT (SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000, 'unixepoch', 'localtime'), CAST(strftime('%H', NEW.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
    INSERT INTO stats_verdicts_monthly SELECT (SELECT id FROM tenants WHERE pk = NEW.tenant_pk), strftime('%Y-%m', NEW.detected_at / 1000, 'unixepoch', 'localtime'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER stats_detection_verdict AFTER UPDATE OF verification_status ON detections
    WHEN OLD.verification_status IS NOT NEW.verification_status
BEGIN
    UPDATE stats_verdicts SET n = n - 1 WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
    INSERT INTO stats_verdicts SELECT (SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000, 'unixepoch', 'localtime'), CAST(strftime('%H', NEW.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
    UPDATE stats_verdicts_monthly SET n = n - 1 WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts_monthly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
    INSERT INTO stats_verdicts_monthly SELECT (SELECT id FROM tenants WHERE pk = NEW.tenant_pk), strftime('%Y-%m', NEW.detected_at / 1000, 'unixepoch', 'localtime'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER stats_detection_votes_removed BEFORE DELETE ON detections
BEGIN
    UPDATE stats_votes SET n = n - (
        SELECT count(*) FROM verification_votes v
        WHERE v.detection_id = OLD.id AND v.user_id = stats_votes.user_id AND v.vote = stats_votes.vote
          AND date(v.created_at, 'localtime') = stats_votes.day)
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND (day, user_id, vote) IN (
        SELECT date(created_at, 'localtime'), user_id, vote FROM verification_votes WHERE detection_id = OLD.id);
    DELETE FROM stats_votes WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND n <= 0;
END;

CREATE TRIGGER stats_detection_removed AFTER DELETE ON detections
BEGIN
    UPDATE stats_daily SET n = n - 1,
        ge05 = ge05 - (CAST(OLD.confidence * 20 AS INTEGER) >= 1),
        ge10 = ge10 - (CAST(OLD.confidence * 20 AS INTEGER) >= 2),
        ge15 = ge15 - (CAST(OLD.confidence * 20 AS INTEGER) >= 3),
        ge20 = ge20 - (CAST(OLD.confidence * 20 AS INTEGER) >= 4),
        ge25 = ge25 - (CAST(OLD.confidence * 20 AS INTEGER) >= 5),
        ge30 = ge30 - (CAST(OLD.confidence * 20 AS INTEGER) >= 6),
        ge35 = ge35 - (CAST(OLD.confidence * 20 AS INTEGER) >= 7),
        ge40 = ge40 - (CAST(OLD.confidence * 20 AS INTEGER) >= 8),
        ge45 = ge45 - (CAST(OLD.confidence * 20 AS INTEGER) >= 9),
        ge50 = ge50 - (CAST(OLD.confidence * 20 AS INTEGER) >= 10),
        ge55 = ge55 - (CAST(OLD.confidence * 20 AS INTEGER) >= 11),
        ge60 = ge60 - (CAST(OLD.confidence * 20 AS INTEGER) >= 12),
        ge65 = ge65 - (CAST(OLD.confidence * 20 AS INTEGER) >= 13),
        ge70 = ge70 - (CAST(OLD.confidence * 20 AS INTEGER) >= 14),
        ge75 = ge75 - (CAST(OLD.confidence * 20 AS INTEGER) >= 15),
        ge80 = ge80 - (CAST(OLD.confidence * 20 AS INTEGER) >= 16),
        ge85 = ge85 - (CAST(OLD.confidence * 20 AS INTEGER) >= 17),
        ge90 = ge90 - (CAST(OLD.confidence * 20 AS INTEGER) >= 18),
        ge95 = ge95 - (CAST(OLD.confidence * 20 AS INTEGER) >= 19),
        ge100 = ge100 - (CAST(OLD.confidence * 20 AS INTEGER) >= 20)
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk);
    DELETE FROM stats_daily WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND n <= 0;
    UPDATE stats_monthly SET n = n - 1,
        ge05 = ge05 - (CAST(OLD.confidence * 20 AS INTEGER) >= 1),
        ge10 = ge10 - (CAST(OLD.confidence * 20 AS INTEGER) >= 2),
        ge15 = ge15 - (CAST(OLD.confidence * 20 AS INTEGER) >= 3),
        ge20 = ge20 - (CAST(OLD.confidence * 20 AS INTEGER) >= 4),
        ge25 = ge25 - (CAST(OLD.confidence * 20 AS INTEGER) >= 5),
        ge30 = ge30 - (CAST(OLD.confidence * 20 AS INTEGER) >= 6),
        ge35 = ge35 - (CAST(OLD.confidence * 20 AS INTEGER) >= 7),
        ge40 = ge40 - (CAST(OLD.confidence * 20 AS INTEGER) >= 8),
        ge45 = ge45 - (CAST(OLD.confidence * 20 AS INTEGER) >= 9),
        ge50 = ge50 - (CAST(OLD.confidence * 20 AS INTEGER) >= 10),
        ge55 = ge55 - (CAST(OLD.confidence * 20 AS INTEGER) >= 11),
        ge60 = ge60 - (CAST(OLD.confidence * 20 AS INTEGER) >= 12),
        ge65 = ge65 - (CAST(OLD.confidence * 20 AS INTEGER) >= 13),
        ge70 = ge70 - (CAST(OLD.confidence * 20 AS INTEGER) >= 14),
        ge75 = ge75 - (CAST(OLD.confidence * 20 AS INTEGER) >= 15),
        ge80 = ge80 - (CAST(OLD.confidence * 20 AS INTEGER) >= 16),
        ge85 = ge85 - (CAST(OLD.confidence * 20 AS INTEGER) >= 17),
        ge90 = ge90 - (CAST(OLD.confidence * 20 AS INTEGER) >= 18),
        ge95 = ge95 - (CAST(OLD.confidence * 20 AS INTEGER) >= 19),
        ge100 = ge100 - (CAST(OLD.confidence * 20 AS INTEGER) >= 20)
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk);
    DELETE FROM stats_monthly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND n <= 0;
    UPDATE stats_hourly SET n = n - 1,
        ge05 = ge05 - (CAST(OLD.confidence * 20 AS INTEGER) >= 1),
        ge10 = ge10 - (CAST(OLD.confidence * 20 AS INTEGER) >= 2),
        ge15 = ge15 - (CAST(OLD.confidence * 20 AS INTEGER) >= 3),
        ge20 = ge20 - (CAST(OLD.confidence * 20 AS INTEGER) >= 4),
        ge25 = ge25 - (CAST(OLD.confidence * 20 AS INTEGER) >= 5),
        ge30 = ge30 - (CAST(OLD.confidence * 20 AS INTEGER) >= 6),
        ge35 = ge35 - (CAST(OLD.confidence * 20 AS INTEGER) >= 7),
        ge40 = ge40 - (CAST(OLD.confidence * 20 AS INTEGER) >= 8),
        ge45 = ge45 - (CAST(OLD.confidence * 20 AS INTEGER) >= 9),
        ge50 = ge50 - (CAST(OLD.confidence * 20 AS INTEGER) >= 10),
        ge55 = ge55 - (CAST(OLD.confidence * 20 AS INTEGER) >= 11),
        ge60 = ge60 - (CAST(OLD.confidence * 20 AS INTEGER) >= 12),
        ge65 = ge65 - (CAST(OLD.confidence * 20 AS INTEGER) >= 13),
        ge70 = ge70 - (CAST(OLD.confidence * 20 AS INTEGER) >= 14),
        ge75 = ge75 - (CAST(OLD.confidence * 20 AS INTEGER) >= 15),
        ge80 = ge80 - (CAST(OLD.confidence * 20 AS INTEGER) >= 16),
        ge85 = ge85 - (CAST(OLD.confidence * 20 AS INTEGER) >= 17),
        ge90 = ge90 - (CAST(OLD.confidence * 20 AS INTEGER) >= 18),
        ge95 = ge95 - (CAST(OLD.confidence * 20 AS INTEGER) >= 19),
        ge100 = ge100 - (CAST(OLD.confidence * 20 AS INTEGER) >= 20)
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk);
    DELETE FROM stats_hourly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND n <= 0;
    UPDATE stats_day_species SET n = n - 1,
        ge05 = ge05 - (CAST(OLD.confidence * 20 AS INTEGER) >= 1),
        ge10 = ge10 - (CAST(OLD.confidence * 20 AS INTEGER) >= 2),
        ge15 = ge15 - (CAST(OLD.confidence * 20 AS INTEGER) >= 3),
        ge20 = ge20 - (CAST(OLD.confidence * 20 AS INTEGER) >= 4),
        ge25 = ge25 - (CAST(OLD.confidence * 20 AS INTEGER) >= 5),
        ge30 = ge30 - (CAST(OLD.confidence * 20 AS INTEGER) >= 6),
        ge35 = ge35 - (CAST(OLD.confidence * 20 AS INTEGER) >= 7),
        ge40 = ge40 - (CAST(OLD.confidence * 20 AS INTEGER) >= 8),
        ge45 = ge45 - (CAST(OLD.confidence * 20 AS INTEGER) >= 9),
        ge50 = ge50 - (CAST(OLD.confidence * 20 AS INTEGER) >= 10),
        ge55 = ge55 - (CAST(OLD.confidence * 20 AS INTEGER) >= 11),
        ge60 = ge60 - (CAST(OLD.confidence * 20 AS INTEGER) >= 12),
        ge65 = ge65 - (CAST(OLD.confidence * 20 AS INTEGER) >= 13),
        ge70 = ge70 - (CAST(OLD.confidence * 20 AS INTEGER) >= 14),
        ge75 = ge75 - (CAST(OLD.confidence * 20 AS INTEGER) >= 15),
        ge80 = ge80 - (CAST(OLD.confidence * 20 AS INTEGER) >= 16),
        ge85 = ge85 - (CAST(OLD.confidence * 20 AS INTEGER) >= 17),
        ge90 = ge90 - (CAST(OLD.confidence * 20 AS INTEGER) >= 18),
        ge95 = ge95 - (CAST(OLD.confidence * 20 AS INTEGER) >= 19),
        ge100 = ge100 - (CAST(OLD.confidence * 20 AS INTEGER) >= 20)
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk);
    DELETE FROM stats_day_species WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND n <= 0;
    UPDATE stats_species_hourly SET n = n - 1,
        ge05 = ge05 - (CAST(OLD.confidence * 20 AS INTEGER) >= 1),
        ge10 = ge10 - (CAST(OLD.confidence * 20 AS INTEGER) >= 2),
        ge15 = ge15 - (CAST(OLD.confidence * 20 AS INTEGER) >= 3),
        ge20 = ge20 - (CAST(OLD.confidence * 20 AS INTEGER) >= 4),
        ge25 = ge25 - (CAST(OLD.confidence * 20 AS INTEGER) >= 5),
        ge30 = ge30 - (CAST(OLD.confidence * 20 AS INTEGER) >= 6),
        ge35 = ge35 - (CAST(OLD.confidence * 20 AS INTEGER) >= 7),
        ge40 = ge40 - (CAST(OLD.confidence * 20 AS INTEGER) >= 8),
        ge45 = ge45 - (CAST(OLD.confidence * 20 AS INTEGER) >= 9),
        ge50 = ge50 - (CAST(OLD.confidence * 20 AS INTEGER) >= 10),
        ge55 = ge55 - (CAST(OLD.confidence * 20 AS INTEGER) >= 11),
        ge60 = ge60 - (CAST(OLD.confidence * 20 AS INTEGER) >= 12),
        ge65 = ge65 - (CAST(OLD.confidence * 20 AS INTEGER) >= 13),
        ge70 = ge70 - (CAST(OLD.confidence * 20 AS INTEGER) >= 14),
        ge75 = ge75 - (CAST(OLD.confidence * 20 AS INTEGER) >= 15),
        ge80 = ge80 - (CAST(OLD.confidence * 20 AS INTEGER) >= 16),
        ge85 = ge85 - (CAST(OLD.confidence * 20 AS INTEGER) >= 17),
        ge90 = ge90 - (CAST(OLD.confidence * 20 AS INTEGER) >= 18),
        ge95 = ge95 - (CAST(OLD.confidence * 20 AS INTEGER) >= 19),
        ge100 = ge100 - (CAST(OLD.confidence * 20 AS INTEGER) >= 20)
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER);
    DELETE FROM stats_species_hourly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER) AND n <= 0;
    UPDATE stats_verdicts SET n = n - 1 WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
    UPDATE stats_verdicts_monthly SET n = n - 1 WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts_monthly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
END;

CREATE TRIGGER stats_chunk_added AFTER INSERT ON audio_chunks
BEGIN
    INSERT INTO stats_chunks VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.recorded_at / 1000, 'unixepoch', 'localtime'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER stats_chunk_removed AFTER DELETE ON audio_chunks
BEGIN
    UPDATE stats_chunks SET n = n - 1
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.recorded_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk);
    DELETE FROM stats_chunks
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.recorded_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk)
      AND n <= 0;
END;

CREATE TRIGGER stats_vote_added AFTER INSERT ON verification_votes
BEGIN
    INSERT INTO stats_votes
    SELECT (SELECT id FROM tenants WHERE pk = d.tenant_pk), date(NEW.created_at, 'localtime'), NEW.user_id, NEW.vote, 1
    FROM detections d WHERE d.id = NEW.detection_id
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER stats_vote_changed AFTER UPDATE OF vote, created_at, user_id ON verification_votes
BEGIN
    UPDATE stats_votes SET n = n - 1
    WHERE tenant_id = (SELECT t.id FROM detections d JOIN tenants t ON t.pk = d.tenant_pk WHERE d.id = OLD.detection_id)
      AND day = date(OLD.created_at, 'localtime') AND user_id = OLD.user_id AND vote = OLD.vote;
    DELETE FROM stats_votes
    WHERE tenant_id = (SELECT t.id FROM detections d JOIN tenants t ON t.pk = d.tenant_pk WHERE d.id = OLD.detection_id)
      AND day = date(OLD.created_at, 'localtime') AND user_id = OLD.user_id AND vote = OLD.vote AND n <= 0;
    INSERT INTO stats_votes
    SELECT (SELECT id FROM tenants WHERE pk = d.tenant_pk), date(NEW.created_at, 'localtime'), NEW.user_id, NEW.vote, 1
    FROM detections d WHERE d.id = NEW.detection_id
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER stats_vote_removed AFTER DELETE ON verification_votes
BEGIN
    UPDATE stats_votes SET n = n - 1
    WHERE tenant_id = (SELECT t.id FROM detections d JOIN tenants t ON t.pk = d.tenant_pk WHERE d.id = OLD.detection_id)
      AND day = date(OLD.created_at, 'localtime') AND user_id = OLD.user_id AND vote = OLD.vote;
    DELETE FROM stats_votes
    WHERE tenant_id = (SELECT t.id FROM detections d JOIN tenants t ON t.pk = d.tenant_pk WHERE d.id = OLD.detection_id)
      AND day = date(OLD.created_at, 'localtime') AND user_id = OLD.user_id AND vote = OLD.vote AND n <= 0;
END;
