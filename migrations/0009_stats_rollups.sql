-- Statistics rollups (SPEC 4.8): the stats routes read these small tables, never the detections.
--
-- Days and hours are the hub's local calendar (SQLite's 'localtime': the system time zone the
-- hub runs in). `band` is the confidence band floor(confidence * 20): band k holds confidences
-- in [k/20, (k+1)/20), so `minConfidence` in steps of 0.05 is a `band >=` test. Verification
-- statuses are columns (`n` is every detection; unverified = n - rejected - confirmed - pending).
-- Triggers keep every table right on insert, on a status change and on delete (including the
-- deletes that cascade from a satellite, a chunk or a team); `birdhub admin rebuild-stats`
-- (store::stats::rollups::rebuild) recomputes them from scratch with the same expressions.

-- Per day, satellite, species and band: ranges that are not whole months, and daily series.
CREATE TABLE stats_daily (
    tenant_id      TEXT NOT NULL,
    day            TEXT NOT NULL,
    satellite_id   TEXT NOT NULL,
    species_code   TEXT NOT NULL,
    band           INTEGER NOT NULL,
    n              INTEGER NOT NULL,
    rejected       INTEGER NOT NULL,
    confirmed      INTEGER NOT NULL,
    pending        INTEGER NOT NULL,
    confidence_sum REAL NOT NULL,
    -- the part of confidence_sum that is of rejected detections
    rejected_confidence REAL NOT NULL,
    PRIMARY KEY (tenant_id, day, satellite_id, species_code, band)
) WITHOUT ROWID;

-- The same per calendar month (`YYYY-MM`): the whole months of a long range.
CREATE TABLE stats_monthly (
    tenant_id      TEXT NOT NULL,
    month          TEXT NOT NULL,
    satellite_id   TEXT NOT NULL,
    species_code   TEXT NOT NULL,
    band           INTEGER NOT NULL,
    n              INTEGER NOT NULL,
    rejected       INTEGER NOT NULL,
    confirmed      INTEGER NOT NULL,
    pending        INTEGER NOT NULL,
    confidence_sum REAL NOT NULL,
    rejected_confidence REAL NOT NULL,
    PRIMARY KEY (tenant_id, month, satellite_id, species_code, band)
) WITHOUT ROWID;

-- Per day, hour and satellite (no species): activity, the heatmap, peak hours, daily totals.
CREATE TABLE stats_hourly (
    tenant_id    TEXT NOT NULL,
    day          TEXT NOT NULL,
    hour         INTEGER NOT NULL,
    satellite_id TEXT NOT NULL,
    band         INTEGER NOT NULL,
    n            INTEGER NOT NULL,
    rejected     INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, day, hour, satellite_id, band)
) WITHOUT ROWID;

-- Per species, day and hour (no satellite): a species profile's daily trend and hourly pattern.
CREATE TABLE stats_species_hourly (
    tenant_id    TEXT NOT NULL,
    species_code TEXT NOT NULL,
    day          TEXT NOT NULL,
    hour         INTEGER NOT NULL,
    band         INTEGER NOT NULL,
    n            INTEGER NOT NULL,
    rejected     INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, species_code, day, hour, band)
) WITHOUT ROWID;

-- Chunks per day and satellite (the dashboard's chunk count).
CREATE TABLE stats_chunks (
    tenant_id    TEXT NOT NULL,
    day          TEXT NOT NULL,
    satellite_id TEXT NOT NULL,
    n            INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, day, satellite_id)
) WITHOUT ROWID;

-- Votes per day (of the vote's creation), voter and vote: the verification leaderboard.
CREATE TABLE stats_votes (
    tenant_id TEXT NOT NULL,
    day       TEXT NOT NULL,
    user_id   TEXT NOT NULL,
    vote      TEXT NOT NULL,
    n         INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, day, user_id, vote)
) WITHOUT ROWID;

-- Detections ---------------------------------------------------------------------------------

CREATE TRIGGER stats_detection_added AFTER INSERT ON detections
BEGIN
    INSERT INTO stats_daily VALUES (
        NEW.tenant_id, date(NEW.detected_at, 'localtime'), NEW.satellite_id, NEW.species_code,
        CAST(NEW.confidence * 20 AS INTEGER), 1, NEW.verification_status = 'rejected',
        NEW.verification_status = 'confirmed', NEW.verification_status = 'pending_review', NEW.confidence,
        (NEW.verification_status = 'rejected') * NEW.confidence)
    ON CONFLICT DO UPDATE SET n = n + 1, rejected = rejected + excluded.rejected,
        confirmed = confirmed + excluded.confirmed, pending = pending + excluded.pending,
        confidence_sum = confidence_sum + excluded.confidence_sum,
        rejected_confidence = rejected_confidence + excluded.rejected_confidence;
    INSERT INTO stats_monthly VALUES (
        NEW.tenant_id, strftime('%Y-%m', NEW.detected_at, 'localtime'), NEW.satellite_id, NEW.species_code,
        CAST(NEW.confidence * 20 AS INTEGER), 1, NEW.verification_status = 'rejected',
        NEW.verification_status = 'confirmed', NEW.verification_status = 'pending_review', NEW.confidence,
        (NEW.verification_status = 'rejected') * NEW.confidence)
    ON CONFLICT DO UPDATE SET n = n + 1, rejected = rejected + excluded.rejected,
        confirmed = confirmed + excluded.confirmed, pending = pending + excluded.pending,
        confidence_sum = confidence_sum + excluded.confidence_sum,
        rejected_confidence = rejected_confidence + excluded.rejected_confidence;
    INSERT INTO stats_hourly VALUES (
        NEW.tenant_id, date(NEW.detected_at, 'localtime'), CAST(strftime('%H', NEW.detected_at, 'localtime') AS INTEGER),
        NEW.satellite_id, CAST(NEW.confidence * 20 AS INTEGER), 1, NEW.verification_status = 'rejected')
    ON CONFLICT DO UPDATE SET n = n + 1, rejected = rejected + excluded.rejected;
    INSERT INTO stats_species_hourly VALUES (
        NEW.tenant_id, NEW.species_code, date(NEW.detected_at, 'localtime'),
        CAST(strftime('%H', NEW.detected_at, 'localtime') AS INTEGER), CAST(NEW.confidence * 20 AS INTEGER), 1,
        NEW.verification_status = 'rejected')
    ON CONFLICT DO UPDATE SET n = n + 1, rejected = rejected + excluded.rejected;
END;

CREATE TRIGGER stats_detection_status AFTER UPDATE OF verification_status ON detections
    WHEN OLD.verification_status IS NOT NEW.verification_status
BEGIN
    UPDATE stats_daily SET
        rejected = rejected + (NEW.verification_status = 'rejected') - (OLD.verification_status = 'rejected'),
        confirmed = confirmed + (NEW.verification_status = 'confirmed') - (OLD.verification_status = 'confirmed'),
        pending = pending + (NEW.verification_status = 'pending_review') - (OLD.verification_status = 'pending_review'),
        rejected_confidence = rejected_confidence
            + ((NEW.verification_status = 'rejected') - (OLD.verification_status = 'rejected')) * OLD.confidence
    WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND satellite_id = OLD.satellite_id
      AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER);
    UPDATE stats_monthly SET
        rejected = rejected + (NEW.verification_status = 'rejected') - (OLD.verification_status = 'rejected'),
        confirmed = confirmed + (NEW.verification_status = 'confirmed') - (OLD.verification_status = 'confirmed'),
        pending = pending + (NEW.verification_status = 'pending_review') - (OLD.verification_status = 'pending_review'),
        rejected_confidence = rejected_confidence
            + ((NEW.verification_status = 'rejected') - (OLD.verification_status = 'rejected')) * OLD.confidence
    WHERE tenant_id = OLD.tenant_id AND month = strftime('%Y-%m', OLD.detected_at, 'localtime')
      AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code
      AND band = CAST(OLD.confidence * 20 AS INTEGER);
    UPDATE stats_hourly SET
        rejected = rejected + (NEW.verification_status = 'rejected') - (OLD.verification_status = 'rejected')
    WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime')
      AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER) AND satellite_id = OLD.satellite_id
      AND band = CAST(OLD.confidence * 20 AS INTEGER);
    UPDATE stats_species_hourly SET
        rejected = rejected + (NEW.verification_status = 'rejected') - (OLD.verification_status = 'rejected')
    WHERE tenant_id = OLD.tenant_id AND species_code = OLD.species_code AND day = date(OLD.detected_at, 'localtime')
      AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER)
      AND band = CAST(OLD.confidence * 20 AS INTEGER);
END;

-- Before the delete: the detection's votes are still there (a cascade removes them after it).
CREATE TRIGGER stats_detection_votes_removed BEFORE DELETE ON detections
BEGIN
    UPDATE stats_votes SET n = n - (
        SELECT count(*) FROM verification_votes v
        WHERE v.detection_id = OLD.id AND v.user_id = stats_votes.user_id AND v.vote = stats_votes.vote
          AND date(v.created_at, 'localtime') = stats_votes.day)
    WHERE tenant_id = OLD.tenant_id AND (day, user_id, vote) IN (
        SELECT date(created_at, 'localtime'), user_id, vote FROM verification_votes WHERE detection_id = OLD.id);
    DELETE FROM stats_votes WHERE tenant_id = OLD.tenant_id AND n <= 0;
END;

CREATE TRIGGER stats_detection_removed AFTER DELETE ON detections
BEGIN
    UPDATE stats_daily SET n = n - 1, rejected = rejected - (OLD.verification_status = 'rejected'),
        confirmed = confirmed - (OLD.verification_status = 'confirmed'),
        pending = pending - (OLD.verification_status = 'pending_review'),
        confidence_sum = confidence_sum - OLD.confidence,
        rejected_confidence = rejected_confidence - (OLD.verification_status = 'rejected') * OLD.confidence
    WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND satellite_id = OLD.satellite_id
      AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER);
    DELETE FROM stats_daily
    WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND satellite_id = OLD.satellite_id
      AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND n <= 0;
    UPDATE stats_monthly SET n = n - 1, rejected = rejected - (OLD.verification_status = 'rejected'),
        confirmed = confirmed - (OLD.verification_status = 'confirmed'),
        pending = pending - (OLD.verification_status = 'pending_review'),
        confidence_sum = confidence_sum - OLD.confidence,
        rejected_confidence = rejected_confidence - (OLD.verification_status = 'rejected') * OLD.confidence
    WHERE tenant_id = OLD.tenant_id AND month = strftime('%Y-%m', OLD.detected_at, 'localtime')
      AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code
      AND band = CAST(OLD.confidence * 20 AS INTEGER);
    DELETE FROM stats_monthly
    WHERE tenant_id = OLD.tenant_id AND month = strftime('%Y-%m', OLD.detected_at, 'localtime')
      AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code
      AND band = CAST(OLD.confidence * 20 AS INTEGER) AND n <= 0;
    UPDATE stats_hourly SET n = n - 1, rejected = rejected - (OLD.verification_status = 'rejected')
    WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime')
      AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER) AND satellite_id = OLD.satellite_id
      AND band = CAST(OLD.confidence * 20 AS INTEGER);
    DELETE FROM stats_hourly
    WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime')
      AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER) AND satellite_id = OLD.satellite_id
      AND band = CAST(OLD.confidence * 20 AS INTEGER) AND n <= 0;
    UPDATE stats_species_hourly SET n = n - 1, rejected = rejected - (OLD.verification_status = 'rejected')
    WHERE tenant_id = OLD.tenant_id AND species_code = OLD.species_code AND day = date(OLD.detected_at, 'localtime')
      AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER)
      AND band = CAST(OLD.confidence * 20 AS INTEGER);
    DELETE FROM stats_species_hourly
    WHERE tenant_id = OLD.tenant_id AND species_code = OLD.species_code AND day = date(OLD.detected_at, 'localtime')
      AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER)
      AND band = CAST(OLD.confidence * 20 AS INTEGER) AND n <= 0;
END;

-- Chunks -------------------------------------------------------------------------------------

CREATE TRIGGER stats_chunk_added AFTER INSERT ON audio_chunks
BEGIN
    INSERT INTO stats_chunks VALUES (NEW.tenant_id, date(NEW.recorded_at, 'localtime'), NEW.satellite_id, 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER stats_chunk_removed AFTER DELETE ON audio_chunks
BEGIN
    UPDATE stats_chunks SET n = n - 1
    WHERE tenant_id = OLD.tenant_id AND day = date(OLD.recorded_at, 'localtime') AND satellite_id = OLD.satellite_id;
    DELETE FROM stats_chunks
    WHERE tenant_id = OLD.tenant_id AND day = date(OLD.recorded_at, 'localtime') AND satellite_id = OLD.satellite_id
      AND n <= 0;
END;

-- Votes (the team is the detection's; when a detection's delete cascades to its votes, the
-- detection is gone and stats_detection_votes_removed has already counted them out) ----------

CREATE TRIGGER stats_vote_added AFTER INSERT ON verification_votes
BEGIN
    INSERT INTO stats_votes
    SELECT d.tenant_id, date(NEW.created_at, 'localtime'), NEW.user_id, NEW.vote, 1
    FROM detections d WHERE d.id = NEW.detection_id
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER stats_vote_changed AFTER UPDATE OF vote, created_at, user_id ON verification_votes
BEGIN
    UPDATE stats_votes SET n = n - 1
    WHERE tenant_id = (SELECT tenant_id FROM detections WHERE id = OLD.detection_id)
      AND day = date(OLD.created_at, 'localtime') AND user_id = OLD.user_id AND vote = OLD.vote;
    DELETE FROM stats_votes
    WHERE tenant_id = (SELECT tenant_id FROM detections WHERE id = OLD.detection_id)
      AND day = date(OLD.created_at, 'localtime') AND user_id = OLD.user_id AND vote = OLD.vote AND n <= 0;
    INSERT INTO stats_votes
    SELECT d.tenant_id, date(NEW.created_at, 'localtime'), NEW.user_id, NEW.vote, 1
    FROM detections d WHERE d.id = NEW.detection_id
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER stats_vote_removed AFTER DELETE ON verification_votes
BEGIN
    UPDATE stats_votes SET n = n - 1
    WHERE tenant_id = (SELECT tenant_id FROM detections WHERE id = OLD.detection_id)
      AND day = date(OLD.created_at, 'localtime') AND user_id = OLD.user_id AND vote = OLD.vote;
    DELETE FROM stats_votes
    WHERE tenant_id = (SELECT tenant_id FROM detections WHERE id = OLD.detection_id)
      AND day = date(OLD.created_at, 'localtime') AND user_id = OLD.user_id AND vote = OLD.vote AND n <= 0;
END;

-- Existing data is summed when this migration runs: the runner calls store::stats::rollups::fill
-- in the same transaction, with the expressions these triggers use.
