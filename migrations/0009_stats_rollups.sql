-- Statistics rollups (SPEC 4.8): the stats routes read these small tables, never the detections.
--
-- Days and hours are the hub's local calendar (SQLite's 'localtime': the system time zone the
-- hub runs in). Each counting table holds `n` (every detection) and `geNN`, the detections with
-- a confidence of at least NN/100 in steps of 0.05 (their band floor(confidence * 20) >= NN/5),
-- so `minConfidence` is one column. Verdicts (confirmed, rejected, pending review) are rare and
-- kept apart in `stats_verdicts` with their band: a statistic that leaves rejected detections
-- out subtracts those rows. Triggers keep every table right on insert, on a verdict change and on
-- delete (including the deletes that cascade from a satellite, a chunk or a team); `birdhub admin
-- rebuild-stats` (store::stats::rollups) recomputes them from scratch with the same expressions.
-- The column lists are regular (ge05 to ge100) and were written out by a short script.

-- Per local day, satellite and species: ranges that are not whole months, a satellite's days.
CREATE TABLE stats_daily (
    tenant_id    TEXT NOT NULL,
    day          TEXT NOT NULL,
    satellite_id TEXT NOT NULL,
    species_code TEXT NOT NULL,
    n            INTEGER NOT NULL,
    ge05 INTEGER NOT NULL,
    ge10 INTEGER NOT NULL,
    ge15 INTEGER NOT NULL,
    ge20 INTEGER NOT NULL,
    ge25 INTEGER NOT NULL,
    ge30 INTEGER NOT NULL,
    ge35 INTEGER NOT NULL,
    ge40 INTEGER NOT NULL,
    ge45 INTEGER NOT NULL,
    ge50 INTEGER NOT NULL,
    ge55 INTEGER NOT NULL,
    ge60 INTEGER NOT NULL,
    ge65 INTEGER NOT NULL,
    ge70 INTEGER NOT NULL,
    ge75 INTEGER NOT NULL,
    ge80 INTEGER NOT NULL,
    ge85 INTEGER NOT NULL,
    ge90 INTEGER NOT NULL,
    ge95 INTEGER NOT NULL,
    ge100 INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, day, satellite_id, species_code)
) WITHOUT ROWID;

-- The same per calendar month (`YYYY-MM`): the whole months of a long range.
CREATE TABLE stats_monthly (
    tenant_id    TEXT NOT NULL,
    month        TEXT NOT NULL,
    satellite_id TEXT NOT NULL,
    species_code TEXT NOT NULL,
    n            INTEGER NOT NULL,
    ge05 INTEGER NOT NULL,
    ge10 INTEGER NOT NULL,
    ge15 INTEGER NOT NULL,
    ge20 INTEGER NOT NULL,
    ge25 INTEGER NOT NULL,
    ge30 INTEGER NOT NULL,
    ge35 INTEGER NOT NULL,
    ge40 INTEGER NOT NULL,
    ge45 INTEGER NOT NULL,
    ge50 INTEGER NOT NULL,
    ge55 INTEGER NOT NULL,
    ge60 INTEGER NOT NULL,
    ge65 INTEGER NOT NULL,
    ge70 INTEGER NOT NULL,
    ge75 INTEGER NOT NULL,
    ge80 INTEGER NOT NULL,
    ge85 INTEGER NOT NULL,
    ge90 INTEGER NOT NULL,
    ge95 INTEGER NOT NULL,
    ge100 INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, month, satellite_id, species_code)
) WITHOUT ROWID;

-- Per day, hour and satellite (no species): activity, the heatmap, peak hours.
CREATE TABLE stats_hourly (
    tenant_id    TEXT NOT NULL,
    day          TEXT NOT NULL,
    hour         INTEGER NOT NULL,
    satellite_id TEXT NOT NULL,
    n            INTEGER NOT NULL,
    ge05 INTEGER NOT NULL,
    ge10 INTEGER NOT NULL,
    ge15 INTEGER NOT NULL,
    ge20 INTEGER NOT NULL,
    ge25 INTEGER NOT NULL,
    ge30 INTEGER NOT NULL,
    ge35 INTEGER NOT NULL,
    ge40 INTEGER NOT NULL,
    ge45 INTEGER NOT NULL,
    ge50 INTEGER NOT NULL,
    ge55 INTEGER NOT NULL,
    ge60 INTEGER NOT NULL,
    ge65 INTEGER NOT NULL,
    ge70 INTEGER NOT NULL,
    ge75 INTEGER NOT NULL,
    ge80 INTEGER NOT NULL,
    ge85 INTEGER NOT NULL,
    ge90 INTEGER NOT NULL,
    ge95 INTEGER NOT NULL,
    ge100 INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, day, hour, satellite_id)
) WITHOUT ROWID;

-- Per day and species (no satellite): the team's daily series.
CREATE TABLE stats_day_species (
    tenant_id    TEXT NOT NULL,
    day          TEXT NOT NULL,
    species_code TEXT NOT NULL,
    n            INTEGER NOT NULL,
    ge05 INTEGER NOT NULL,
    ge10 INTEGER NOT NULL,
    ge15 INTEGER NOT NULL,
    ge20 INTEGER NOT NULL,
    ge25 INTEGER NOT NULL,
    ge30 INTEGER NOT NULL,
    ge35 INTEGER NOT NULL,
    ge40 INTEGER NOT NULL,
    ge45 INTEGER NOT NULL,
    ge50 INTEGER NOT NULL,
    ge55 INTEGER NOT NULL,
    ge60 INTEGER NOT NULL,
    ge65 INTEGER NOT NULL,
    ge70 INTEGER NOT NULL,
    ge75 INTEGER NOT NULL,
    ge80 INTEGER NOT NULL,
    ge85 INTEGER NOT NULL,
    ge90 INTEGER NOT NULL,
    ge95 INTEGER NOT NULL,
    ge100 INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, day, species_code)
) WITHOUT ROWID;

-- Per species, day and hour (no satellite): a species profile's days and hours.
CREATE TABLE stats_species_hourly (
    tenant_id    TEXT NOT NULL,
    species_code TEXT NOT NULL,
    day          TEXT NOT NULL,
    hour         INTEGER NOT NULL,
    n            INTEGER NOT NULL,
    ge05 INTEGER NOT NULL,
    ge10 INTEGER NOT NULL,
    ge15 INTEGER NOT NULL,
    ge20 INTEGER NOT NULL,
    ge25 INTEGER NOT NULL,
    ge30 INTEGER NOT NULL,
    ge35 INTEGER NOT NULL,
    ge40 INTEGER NOT NULL,
    ge45 INTEGER NOT NULL,
    ge50 INTEGER NOT NULL,
    ge55 INTEGER NOT NULL,
    ge60 INTEGER NOT NULL,
    ge65 INTEGER NOT NULL,
    ge70 INTEGER NOT NULL,
    ge75 INTEGER NOT NULL,
    ge80 INTEGER NOT NULL,
    ge85 INTEGER NOT NULL,
    ge90 INTEGER NOT NULL,
    ge95 INTEGER NOT NULL,
    ge100 INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, species_code, day, hour)
) WITHOUT ROWID;

-- A satellite's days over a long range, read from the index alone (it holds every count).
CREATE INDEX stats_daily_satellite ON stats_daily(tenant_id, satellite_id, day, species_code, n, ge05, ge10, ge15, ge20, ge25, ge30, ge35, ge40, ge45, ge50, ge55, ge60, ge65, ge70, ge75, ge80, ge85, ge90, ge95, ge100);

-- Detections with a verdict, per day, hour, satellite, species, confidence band and status.
CREATE TABLE stats_verdicts (
    tenant_id    TEXT NOT NULL,
    day          TEXT NOT NULL,
    hour         INTEGER NOT NULL,
    satellite_id TEXT NOT NULL,
    species_code TEXT NOT NULL,
    band         INTEGER NOT NULL,
    status       TEXT NOT NULL,
    n            INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, status, day, hour, satellite_id, species_code, band)
) WITHOUT ROWID;

-- The same per calendar month (no hour): the whole months of a long range.
CREATE TABLE stats_verdicts_monthly (
    tenant_id    TEXT NOT NULL,
    month        TEXT NOT NULL,
    satellite_id TEXT NOT NULL,
    species_code TEXT NOT NULL,
    band         INTEGER NOT NULL,
    status       TEXT NOT NULL,
    n            INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, status, month, satellite_id, species_code, band)
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
    INSERT INTO stats_daily VALUES (NEW.tenant_id, date(NEW.detected_at, 'localtime'), NEW.satellite_id, NEW.species_code, 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_monthly VALUES (NEW.tenant_id, strftime('%Y-%m', NEW.detected_at, 'localtime'), NEW.satellite_id, NEW.species_code, 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_hourly VALUES (NEW.tenant_id, date(NEW.detected_at, 'localtime'), CAST(strftime('%H', NEW.detected_at, 'localtime') AS INTEGER), NEW.satellite_id, 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_day_species VALUES (NEW.tenant_id, date(NEW.detected_at, 'localtime'), NEW.species_code, 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_species_hourly VALUES (NEW.tenant_id, NEW.species_code, date(NEW.detected_at, 'localtime'), CAST(strftime('%H', NEW.detected_at, 'localtime') AS INTEGER), 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_verdicts SELECT NEW.tenant_id, date(NEW.detected_at, 'localtime'), CAST(strftime('%H', NEW.detected_at, 'localtime') AS INTEGER), NEW.satellite_id, NEW.species_code, CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
    INSERT INTO stats_verdicts_monthly SELECT NEW.tenant_id, strftime('%Y-%m', NEW.detected_at, 'localtime'), NEW.satellite_id, NEW.species_code, CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER stats_detection_verdict AFTER UPDATE OF verification_status ON detections
    WHEN OLD.verification_status IS NOT NEW.verification_status
BEGIN
    UPDATE stats_verdicts SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER) AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER) AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
    INSERT INTO stats_verdicts SELECT NEW.tenant_id, date(NEW.detected_at, 'localtime'), CAST(strftime('%H', NEW.detected_at, 'localtime') AS INTEGER), NEW.satellite_id, NEW.species_code, CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
    UPDATE stats_verdicts_monthly SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND month = strftime('%Y-%m', OLD.detected_at, 'localtime') AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts_monthly WHERE tenant_id = OLD.tenant_id AND month = strftime('%Y-%m', OLD.detected_at, 'localtime') AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
    INSERT INTO stats_verdicts_monthly SELECT NEW.tenant_id, strftime('%Y-%m', NEW.detected_at, 'localtime'), NEW.satellite_id, NEW.species_code, CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
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
    WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code;
    DELETE FROM stats_daily WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code AND n <= 0;
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
    WHERE tenant_id = OLD.tenant_id AND month = strftime('%Y-%m', OLD.detected_at, 'localtime') AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code;
    DELETE FROM stats_monthly WHERE tenant_id = OLD.tenant_id AND month = strftime('%Y-%m', OLD.detected_at, 'localtime') AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code AND n <= 0;
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
    WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER) AND satellite_id = OLD.satellite_id;
    DELETE FROM stats_hourly WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER) AND satellite_id = OLD.satellite_id AND n <= 0;
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
    WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND species_code = OLD.species_code;
    DELETE FROM stats_day_species WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND species_code = OLD.species_code AND n <= 0;
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
    WHERE tenant_id = OLD.tenant_id AND species_code = OLD.species_code AND day = date(OLD.detected_at, 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER);
    DELETE FROM stats_species_hourly WHERE tenant_id = OLD.tenant_id AND species_code = OLD.species_code AND day = date(OLD.detected_at, 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER) AND n <= 0;
    UPDATE stats_verdicts SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER) AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts WHERE tenant_id = OLD.tenant_id AND day = date(OLD.detected_at, 'localtime') AND hour = CAST(strftime('%H', OLD.detected_at, 'localtime') AS INTEGER) AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
    UPDATE stats_verdicts_monthly SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND month = strftime('%Y-%m', OLD.detected_at, 'localtime') AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts_monthly WHERE tenant_id = OLD.tenant_id AND month = strftime('%Y-%m', OLD.detected_at, 'localtime') AND satellite_id = OLD.satellite_id AND species_code = OLD.species_code AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
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
