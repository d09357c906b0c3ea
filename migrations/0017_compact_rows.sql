-- birdhub: foreign-keys-off
-- Integer keys and times inside the two big tables (issue 18). Every audio chunk and detection row, and
-- every entry of their indexes, carried its team's and satellite's UUID as 36 characters of
-- text (and a detection its chunk's, a chunk its session's): on the benchmark year that was
-- about half of a 4 GB file. Teams, satellites and sessions get a small integer `pk` beside
-- their UUID, chunks and detections an `INTEGER PRIMARY KEY`, and the big tables refer to
-- each other by those. UUIDs stay the ids of the API, the MQTT topics and the storage keys;
-- queries turn one into the other where they meet (`tenant_pk = (SELECT pk FROM tenants
-- WHERE id = ?)`), which is one index lookup.
--
-- Their times (`recorded_at`, `received_at` and `audio_expired_at` of a chunk, `detected_at` and
-- `created_at` of a detection) become milliseconds since the Unix epoch: 6 bytes instead of 24
-- in the row, and in each of the eight indexes ordered by `recorded_at` or `detected_at`.
-- Queries bind `Timestamp::millis`, and SQL reads a day as `date(recorded_at / 1000,
-- 'unixepoch')`. `shared_until` stays text. Both tables are STRICT, so a text time written by
-- mistake is refused instead of sorting apart from the numbers.
--
-- The runner applies this one with foreign keys off (the first line asks for it), as SQLite's
-- table-rebuild procedure requires, and checks every foreign key before it commits.

-- The internal keys of teams, satellites and sessions. The rowid is not stable (VACUUM may
-- renumber it) so each gets its own column, given on insert by a trigger.
ALTER TABLE tenants ADD COLUMN pk INTEGER;
UPDATE tenants SET pk = rowid;
CREATE UNIQUE INDEX tenants_pk ON tenants(pk);
CREATE TRIGGER tenants_pk_given AFTER INSERT ON tenants WHEN NEW.pk IS NULL
BEGIN
    UPDATE tenants SET pk = (SELECT coalesce(max(pk), 0) + 1 FROM tenants) WHERE id = NEW.id;
END;

ALTER TABLE satellites ADD COLUMN pk INTEGER;
UPDATE satellites SET pk = rowid;
CREATE UNIQUE INDEX satellites_pk ON satellites(pk);
CREATE TRIGGER satellites_pk_given AFTER INSERT ON satellites WHEN NEW.pk IS NULL
BEGIN
    UPDATE satellites SET pk = (SELECT coalesce(max(pk), 0) + 1 FROM satellites) WHERE id = NEW.id;
END;

ALTER TABLE recording_sessions ADD COLUMN pk INTEGER;
UPDATE recording_sessions SET pk = rowid;
CREATE UNIQUE INDEX recording_sessions_pk ON recording_sessions(pk);
CREATE TRIGGER recording_sessions_pk_given AFTER INSERT ON recording_sessions WHEN NEW.pk IS NULL
BEGIN
    UPDATE recording_sessions SET pk = (SELECT coalesce(max(pk), 0) + 1 FROM recording_sessions) WHERE id = NEW.id;
END;

-- The triggers of other tables that read the big ones go first (they are rebuilt below).
DROP TRIGGER stats_vote_added;
DROP TRIGGER stats_vote_changed;
DROP TRIGGER stats_vote_removed;

-- Audio chunks ---------------------------------------------------------------------------------

CREATE TABLE audio_chunks_compact (
    pk               INTEGER PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
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
INSERT INTO audio_chunks_compact
SELECT c.rowid, c.id, t.pk, s.pk, CAST(round((julianday(c.recorded_at) - 2440587.5) * 86400000) AS INTEGER), c.duration_ms, c.sample_rate, c.latitude, c.longitude,
       c.storage_key, c.size_bytes, CAST(round((julianday(c.received_at) - 2440587.5) * 86400000) AS INTEGER), r.pk,
       CAST(round((julianday(c.audio_expired_at) - 2440587.5) * 86400000) AS INTEGER), c.audio_deleted
FROM audio_chunks c
JOIN tenants t ON t.id = c.tenant_id
JOIN satellites s ON s.id = c.satellite_id
LEFT JOIN recording_sessions r ON r.id = c.session_id
ORDER BY c.rowid;

-- Detections -----------------------------------------------------------------------------------

CREATE TABLE detections_compact (
    pk                  INTEGER PRIMARY KEY,
    id                  TEXT NOT NULL UNIQUE,
    tenant_pk           INTEGER NOT NULL REFERENCES tenants(pk) ON DELETE CASCADE,
    satellite_pk        INTEGER NOT NULL REFERENCES satellites(pk) ON DELETE CASCADE,
    chunk_pk            INTEGER NOT NULL REFERENCES audio_chunks(pk) ON DELETE CASCADE,
    model_id            TEXT NOT NULL,
    species_code        TEXT NOT NULL,
    scientific_name     TEXT NOT NULL,
    common_name         TEXT NOT NULL,
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
INSERT INTO detections_compact
SELECT d.rowid, d.id, t.pk, s.pk, c.pk, d.model_id, d.species_code, d.scientific_name, d.common_name,
       d.confidence, CAST(round((julianday(d.detected_at) - 2440587.5) * 86400000) AS INTEGER), d.start_ms, d.end_ms, d.is_rare, d.rare_reason, d.is_first_of_day,
       d.is_first_of_season, d.expected_here, d.verification_status, CAST(round((julianday(d.created_at) - 2440587.5) * 86400000) AS INTEGER), d.shared_until
FROM detections d
JOIN tenants t ON t.id = d.tenant_id
JOIN satellites s ON s.id = d.satellite_id
JOIN audio_chunks_compact c ON c.id = d.audio_chunk_id
ORDER BY d.rowid;

-- The old tables go (their indexes and triggers with them) and the new ones take their names;
-- the tables that refer to chunks and detections by UUID (jobs, votes, comments, annotations)
-- keep doing so through the UNIQUE ids.
DROP TABLE detections;
DROP TABLE audio_chunks;
ALTER TABLE audio_chunks_compact RENAME TO audio_chunks;
ALTER TABLE detections_compact RENAME TO detections;

-- The same indexes as before, on the integer keys (the names are the ones queries name with
-- INDEXED BY).
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
CREATE UNIQUE INDEX detections_chunk_species ON detections(chunk_pk, species_code);
CREATE INDEX detections_tenant_species_day ON detections(tenant_pk, species_code, detected_at);
CREATE INDEX detections_tenant_name_time ON detections(tenant_pk, common_name, detected_at);
CREATE INDEX detections_tenant_status_confidence ON detections(tenant_pk, verification_status, confidence, model_id);

-- The summaries below are keyed by UUID, which the triggers of a removed row read through its
-- keys. A foreign key's cascade runs after its parent row is gone, so a team's or satellite's
-- chunks (and with them their detections) are removed first, while the UUIDs can still be read.
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

-- The triggers of 0004 (species summary) and 0009 (statistics rollups), unchanged but for
-- reading the team's and satellite's UUIDs through the keys: the summaries stay keyed by UUID.

CREATE TRIGGER detections_species_added AFTER INSERT ON detections
BEGIN
    INSERT INTO tenant_species (tenant_id, species_code, common_name, scientific_name, detection_count,
                                first_detected_at, last_detected_at)
    VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), NEW.species_code, NEW.common_name, NEW.scientific_name, 1,
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
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND species_code = OLD.species_code;
    DELETE FROM tenant_species
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND species_code = OLD.species_code AND detection_count <= 0;
END;

CREATE TRIGGER stats_detection_added AFTER INSERT ON detections
BEGIN
    INSERT INTO stats_daily VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000, 'unixepoch', 'localtime'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), NEW.species_code, 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_monthly VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), strftime('%Y-%m', NEW.detected_at / 1000, 'unixepoch', 'localtime'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), NEW.species_code, 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_day_species VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000, 'unixepoch', 'localtime'), NEW.species_code, 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_species_hourly VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), NEW.species_code, date(NEW.detected_at / 1000, 'unixepoch', 'localtime'), CAST(strftime('%H', NEW.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER), 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_verdicts SELECT (SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000, 'unixepoch', 'localtime'), CAST(strftime('%H', NEW.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), NEW.species_code, CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
    INSERT INTO stats_verdicts_monthly SELECT (SELECT id FROM tenants WHERE pk = NEW.tenant_pk), strftime('%Y-%m', NEW.detected_at / 1000, 'unixepoch', 'localtime'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), NEW.species_code, CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER stats_detection_verdict AFTER UPDATE OF verification_status ON detections
    WHEN OLD.verification_status IS NOT NEW.verification_status
BEGIN
    UPDATE stats_verdicts SET n = n - 1 WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
    INSERT INTO stats_verdicts SELECT (SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000, 'unixepoch', 'localtime'), CAST(strftime('%H', NEW.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), NEW.species_code, CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
    UPDATE stats_verdicts_monthly SET n = n - 1 WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts_monthly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
    INSERT INTO stats_verdicts_monthly SELECT (SELECT id FROM tenants WHERE pk = NEW.tenant_pk), strftime('%Y-%m', NEW.detected_at / 1000, 'unixepoch', 'localtime'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), NEW.species_code, CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
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
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = OLD.species_code;
    DELETE FROM stats_daily WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = OLD.species_code AND n <= 0;
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
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = OLD.species_code;
    DELETE FROM stats_monthly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = OLD.species_code AND n <= 0;
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
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND species_code = OLD.species_code;
    DELETE FROM stats_day_species WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND species_code = OLD.species_code AND n <= 0;
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
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND species_code = OLD.species_code AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER);
    DELETE FROM stats_species_hourly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND species_code = OLD.species_code AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER) AND n <= 0;
    UPDATE stats_verdicts SET n = n - 1 WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000, 'unixepoch', 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at / 1000, 'unixepoch', 'localtime') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
    UPDATE stats_verdicts_monthly SET n = n - 1 WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts_monthly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000, 'unixepoch', 'localtime') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
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

