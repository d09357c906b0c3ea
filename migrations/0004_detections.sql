-- Detections for people: recording sessions kept up to date as chunks arrive, a per-team species
-- summary (search, counts) kept by triggers, and the indexes of the list sorts.

-- A session (SPEC 2.12): one satellite's chunks whose start times are less than 5 minutes apart.
CREATE TABLE recording_sessions (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    satellite_id    TEXT NOT NULL REFERENCES satellites(id) ON DELETE CASCADE,
    -- recorded_at of the first and of the last chunk
    started_at      TEXT NOT NULL,
    last_chunk_at   TEXT NOT NULL,
    -- the end of the latest-ending chunk
    ended_at        TEXT NOT NULL,
    duration_ms     INTEGER NOT NULL,
    chunk_count     INTEGER NOT NULL,
    detection_count INTEGER NOT NULL DEFAULT 0,
    species_count   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX recording_sessions_satellite ON recording_sessions(satellite_id, started_at);
CREATE INDEX recording_sessions_tenant_time ON recording_sessions(tenant_id, started_at);
-- One per sort of GET /sessions, ending in the start time so ties need no sort step either.
CREATE INDEX recording_sessions_tenant_duration ON recording_sessions(tenant_id, duration_ms, started_at);
CREATE INDEX recording_sessions_tenant_detections ON recording_sessions(tenant_id, detection_count, started_at);
CREATE INDEX recording_sessions_tenant_species ON recording_sessions(tenant_id, species_count, started_at);
CREATE INDEX recording_sessions_tenant_chunks ON recording_sessions(tenant_id, chunk_count, started_at);

-- Detections per species within a session (the session's detection summary).
CREATE TABLE session_species (
    session_id      TEXT NOT NULL REFERENCES recording_sessions(id) ON DELETE CASCADE,
    species_code    TEXT NOT NULL,
    common_name     TEXT NOT NULL,
    scientific_name TEXT NOT NULL,
    detections      INTEGER NOT NULL,
    PRIMARY KEY (session_id, species_code)
) WITHOUT ROWID;

-- Filled for existing chunks by the hub at start-up (store::recording_sessions::backfill).
ALTER TABLE audio_chunks ADD COLUMN session_id TEXT REFERENCES recording_sessions(id) ON DELETE SET NULL;
CREATE INDEX audio_chunks_session ON audio_chunks(session_id);
CREATE INDEX audio_chunks_unsessioned ON audio_chunks(satellite_id, recorded_at) WHERE session_id IS NULL;

-- Every species a team has detected, with counts: speciesSearch resolves names here instead of
-- scanning detections, and unfiltered totals are sums of these counts.
CREATE TABLE tenant_species (
    tenant_id         TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    species_code      TEXT NOT NULL,
    common_name       TEXT NOT NULL,
    scientific_name   TEXT NOT NULL,
    detection_count   INTEGER NOT NULL,
    first_detected_at TEXT NOT NULL,
    last_detected_at  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, species_code)
) WITHOUT ROWID;

INSERT INTO tenant_species
SELECT tenant_id, species_code, max(common_name), max(scientific_name), count(*), min(detected_at), max(detected_at)
FROM detections GROUP BY tenant_id, species_code;

CREATE TRIGGER detections_species_added AFTER INSERT ON detections
BEGIN
    INSERT INTO tenant_species (tenant_id, species_code, common_name, scientific_name, detection_count,
                                first_detected_at, last_detected_at)
    VALUES (NEW.tenant_id, NEW.species_code, NEW.common_name, NEW.scientific_name, 1, NEW.detected_at, NEW.detected_at)
    ON CONFLICT (tenant_id, species_code) DO UPDATE SET
        detection_count = detection_count + 1,
        first_detected_at = min(first_detected_at, excluded.first_detected_at),
        last_detected_at = max(last_detected_at, excluded.last_detected_at);
END;

CREATE TRIGGER detections_species_removed AFTER DELETE ON detections
BEGIN
    UPDATE tenant_species SET detection_count = detection_count - 1
    WHERE tenant_id = OLD.tenant_id AND species_code = OLD.species_code;
    DELETE FROM tenant_species
    WHERE tenant_id = OLD.tenant_id AND species_code = OLD.species_code AND detection_count <= 0;
END;

-- 0003 added detections_tenant_species_day with the same columns; one is enough.
DROP INDEX IF EXISTS detections_tenant_species_time;

-- sortBy=species (by common name, newest first within a species).
CREATE INDEX detections_tenant_name_time ON detections(tenant_id, common_name, detected_at);
-- The review queue (a verification status ordered by confidence); with the model it also covers
-- the calibration's reads of verified confidences.
CREATE INDEX detections_tenant_status_confidence ON detections(tenant_id, verification_status, confidence, model_id);
