-- Local time everywhere (issue 37). Days and hours in the statistics rollups were SQLite's
-- 'localtime', the machine's zone. From here every detection, chunk and vote counts on the local
-- day and hour of its station: the satellite's effective IANA zone (its override, else the zone
-- of its coordinates, else its team's `time_zone` setting), resolved in Rust
-- (`usecases::zones`) and kept on the satellite row.
--
-- SQLite knows no zones, so each zone in use has its UTC offsets stored as a step function:
-- `zone_offsets` holds, per zone, the offset in seconds that applies from `start_ms` (Unix
-- milliseconds) until the next row. Rust fills it from the tz database (`store::zones::ensure`).
-- Zone 1 is UTC, with one row from the beginning of time.
CREATE TABLE zones (
    pk   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
) STRICT;
CREATE TABLE zone_offsets (
    zone_pk  INTEGER NOT NULL REFERENCES zones(pk) ON DELETE CASCADE,
    start_ms INTEGER NOT NULL,
    offset_s INTEGER NOT NULL,
    PRIMARY KEY (zone_pk, start_ms)
) WITHOUT ROWID, STRICT;
INSERT INTO zones (pk, name) VALUES (1, 'UTC');
INSERT INTO zone_offsets VALUES (1, -9223372036854775808, 0);

-- A satellite's zone: `zone_override` (an IANA name a person chose, or NULL), the effective
-- `time_zone` and where it came from (`zone_source`: override, position or team), and `zone_pk`,
-- the zone its rollup rows are counted in. When the effective zone changes, the zone mover
-- (`usecases::zones`) moves its counts over in batches: while it runs, `zone_move_from` is the
-- old zone, and detections (chunks) with pk in (`zone_move_det_done`, `zone_move_det_last`]
-- (`..._chunk_...`) are still counted in it; the triggers below read the same rule.
ALTER TABLE satellites ADD COLUMN zone_override TEXT;
ALTER TABLE satellites ADD COLUMN time_zone TEXT;
ALTER TABLE satellites ADD COLUMN zone_source TEXT;
ALTER TABLE satellites ADD COLUMN zone_pk INTEGER NOT NULL DEFAULT 1;
ALTER TABLE satellites ADD COLUMN zone_move_from INTEGER;
ALTER TABLE satellites ADD COLUMN zone_move_det_done INTEGER NOT NULL DEFAULT 0;
ALTER TABLE satellites ADD COLUMN zone_move_det_last INTEGER NOT NULL DEFAULT 0;
ALTER TABLE satellites ADD COLUMN zone_move_chunk_done INTEGER NOT NULL DEFAULT 0;
ALTER TABLE satellites ADD COLUMN zone_move_chunk_last INTEGER NOT NULL DEFAULT 0;
ALTER TABLE satellites ADD COLUMN zone_move_total INTEGER NOT NULL DEFAULT 0;
ALTER TABLE satellites ADD COLUMN zone_move_moved INTEGER NOT NULL DEFAULT 0;
ALTER TABLE satellites ADD COLUMN zone_move_started_at TEXT;

-- The triggers of 0017, with each 'localtime' replaced by the station's offset at that instant
-- (written out by a short script: the expression is the same everywhere).
DROP TRIGGER stats_detection_added;
DROP TRIGGER stats_detection_verdict;
DROP TRIGGER stats_detection_votes_removed;
DROP TRIGGER stats_detection_removed;
DROP TRIGGER stats_chunk_added;
DROP TRIGGER stats_chunk_removed;
DROP TRIGGER stats_vote_added;
DROP TRIGGER stats_vote_changed;
DROP TRIGGER stats_vote_removed;

CREATE TRIGGER stats_detection_added AFTER INSERT ON detections
BEGIN
    INSERT INTO stats_daily VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_monthly VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), strftime('%Y-%m', NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_hourly VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), CAST(strftime('%H', NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AS INTEGER), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_day_species VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_species_hourly VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), date(NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), CAST(strftime('%H', NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AS INTEGER), 1, CAST(NEW.confidence * 20 AS INTEGER) >= 1, CAST(NEW.confidence * 20 AS INTEGER) >= 2, CAST(NEW.confidence * 20 AS INTEGER) >= 3, CAST(NEW.confidence * 20 AS INTEGER) >= 4, CAST(NEW.confidence * 20 AS INTEGER) >= 5, CAST(NEW.confidence * 20 AS INTEGER) >= 6, CAST(NEW.confidence * 20 AS INTEGER) >= 7, CAST(NEW.confidence * 20 AS INTEGER) >= 8, CAST(NEW.confidence * 20 AS INTEGER) >= 9, CAST(NEW.confidence * 20 AS INTEGER) >= 10, CAST(NEW.confidence * 20 AS INTEGER) >= 11, CAST(NEW.confidence * 20 AS INTEGER) >= 12, CAST(NEW.confidence * 20 AS INTEGER) >= 13, CAST(NEW.confidence * 20 AS INTEGER) >= 14, CAST(NEW.confidence * 20 AS INTEGER) >= 15, CAST(NEW.confidence * 20 AS INTEGER) >= 16, CAST(NEW.confidence * 20 AS INTEGER) >= 17, CAST(NEW.confidence * 20 AS INTEGER) >= 18, CAST(NEW.confidence * 20 AS INTEGER) >= 19, CAST(NEW.confidence * 20 AS INTEGER) >= 20)
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
    INSERT INTO stats_verdicts SELECT (SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), CAST(strftime('%H', NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AS INTEGER), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
    INSERT INTO stats_verdicts_monthly SELECT (SELECT id FROM tenants WHERE pk = NEW.tenant_pk), strftime('%Y-%m', NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER stats_detection_verdict AFTER UPDATE OF verification_status ON detections
    WHEN OLD.verification_status IS NOT NEW.verification_status
BEGIN
    UPDATE stats_verdicts SET n = n - 1 WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND hour = CAST(strftime('%H', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND hour = CAST(strftime('%H', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
    INSERT INTO stats_verdicts SELECT (SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), CAST(strftime('%H', NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AS INTEGER), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
    UPDATE stats_verdicts_monthly SET n = n - 1 WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts_monthly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
    INSERT INTO stats_verdicts_monthly SELECT (SELECT id FROM tenants WHERE pk = NEW.tenant_pk), strftime('%Y-%m', NEW.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_det_done AND NEW.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), (SELECT species_code FROM species_labels WHERE pk = NEW.species_pk), CAST(NEW.confidence * 20 AS INTEGER), NEW.verification_status, 1
    WHERE NEW.verification_status <> 'unverified'
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER stats_detection_votes_removed BEFORE DELETE ON detections
BEGIN
    UPDATE stats_votes SET n = n - (
        SELECT count(*) FROM verification_votes v
        WHERE v.detection_id = OLD.id AND v.user_id = stats_votes.user_id AND v.vote = stats_votes.vote
          AND date(CAST(round((julianday(v.created_at) - 2440587.5) * 86400000) AS INTEGER) / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= CAST(round((julianday(v.created_at) - 2440587.5) * 86400000) AS INTEGER) ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') = stats_votes.day)
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND (day, user_id, vote) IN (
        SELECT date(CAST(round((julianday(created_at) - 2440587.5) * 86400000) AS INTEGER) / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= CAST(round((julianday(created_at) - 2440587.5) * 86400000) AS INTEGER) ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), user_id, vote FROM verification_votes WHERE detection_id = OLD.id);
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
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk);
    DELETE FROM stats_daily WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND n <= 0;
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
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk);
    DELETE FROM stats_monthly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND n <= 0;
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
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND hour = CAST(strftime('%H', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk);
    DELETE FROM stats_hourly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND hour = CAST(strftime('%H', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND n <= 0;
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
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk);
    DELETE FROM stats_day_species WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND n <= 0;
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
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND day = date(OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND hour = CAST(strftime('%H', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AS INTEGER);
    DELETE FROM stats_species_hourly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND day = date(OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND hour = CAST(strftime('%H', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AS INTEGER) AND n <= 0;
    UPDATE stats_verdicts SET n = n - 1 WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND hour = CAST(strftime('%H', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND hour = CAST(strftime('%H', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AS INTEGER) AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
    UPDATE stats_verdicts_monthly SET n = n - 1 WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status;
    DELETE FROM stats_verdicts_monthly WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND month = strftime('%Y-%m', OLD.detected_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_det_done AND OLD.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.detected_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk) AND species_code = (SELECT species_code FROM species_labels WHERE pk = OLD.species_pk) AND band = CAST(OLD.confidence * 20 AS INTEGER) AND status = OLD.verification_status AND n <= 0;
END;
CREATE TRIGGER stats_chunk_added AFTER INSERT ON audio_chunks
BEGIN
    INSERT INTO stats_chunks VALUES ((SELECT id FROM tenants WHERE pk = NEW.tenant_pk), date(NEW.recorded_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND NEW.pk > z.zone_move_chunk_done AND NEW.pk <= z.zone_move_chunk_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = NEW.satellite_pk) AND o.start_ms <= NEW.recorded_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), (SELECT id FROM satellites WHERE pk = NEW.satellite_pk), 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER stats_chunk_removed AFTER DELETE ON audio_chunks
BEGIN
    UPDATE stats_chunks SET n = n - 1
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.recorded_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_chunk_done AND OLD.pk <= z.zone_move_chunk_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.recorded_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk);
    DELETE FROM stats_chunks
    WHERE tenant_id = (SELECT id FROM tenants WHERE pk = OLD.tenant_pk) AND day = date(OLD.recorded_at / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND OLD.pk > z.zone_move_chunk_done AND OLD.pk <= z.zone_move_chunk_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = OLD.satellite_pk) AND o.start_ms <= OLD.recorded_at ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') AND satellite_id = (SELECT id FROM satellites WHERE pk = OLD.satellite_pk)
      AND n <= 0;
END;
CREATE TRIGGER stats_vote_added AFTER INSERT ON verification_votes
BEGIN
    INSERT INTO stats_votes
    SELECT (SELECT id FROM tenants WHERE pk = d.tenant_pk), date(CAST(round((julianday(NEW.created_at) - 2440587.5) * 86400000) AS INTEGER) / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND d.pk > z.zone_move_det_done AND d.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = d.satellite_pk) AND o.start_ms <= CAST(round((julianday(NEW.created_at) - 2440587.5) * 86400000) AS INTEGER) ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), NEW.user_id, NEW.vote, 1
    FROM detections d WHERE d.id = NEW.detection_id
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER stats_vote_changed AFTER UPDATE OF vote, created_at, user_id ON verification_votes
BEGIN
    UPDATE stats_votes SET n = n - 1
    WHERE tenant_id = (SELECT t.id FROM detections d JOIN tenants t ON t.pk = d.tenant_pk WHERE d.id = OLD.detection_id)
      AND day = (SELECT date(CAST(round((julianday(OLD.created_at) - 2440587.5) * 86400000) AS INTEGER) / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND d.pk > z.zone_move_det_done AND d.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = d.satellite_pk) AND o.start_ms <= CAST(round((julianday(OLD.created_at) - 2440587.5) * 86400000) AS INTEGER) ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') FROM detections d WHERE d.id = OLD.detection_id) AND user_id = OLD.user_id AND vote = OLD.vote;
    DELETE FROM stats_votes
    WHERE tenant_id = (SELECT t.id FROM detections d JOIN tenants t ON t.pk = d.tenant_pk WHERE d.id = OLD.detection_id)
      AND day = (SELECT date(CAST(round((julianday(OLD.created_at) - 2440587.5) * 86400000) AS INTEGER) / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND d.pk > z.zone_move_det_done AND d.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = d.satellite_pk) AND o.start_ms <= CAST(round((julianday(OLD.created_at) - 2440587.5) * 86400000) AS INTEGER) ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') FROM detections d WHERE d.id = OLD.detection_id) AND user_id = OLD.user_id AND vote = OLD.vote AND n <= 0;
    INSERT INTO stats_votes
    SELECT (SELECT id FROM tenants WHERE pk = d.tenant_pk), date(CAST(round((julianday(NEW.created_at) - 2440587.5) * 86400000) AS INTEGER) / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND d.pk > z.zone_move_det_done AND d.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = d.satellite_pk) AND o.start_ms <= CAST(round((julianday(NEW.created_at) - 2440587.5) * 86400000) AS INTEGER) ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch'), NEW.user_id, NEW.vote, 1
    FROM detections d WHERE d.id = NEW.detection_id
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER stats_vote_removed AFTER DELETE ON verification_votes
BEGIN
    UPDATE stats_votes SET n = n - 1
    WHERE tenant_id = (SELECT t.id FROM detections d JOIN tenants t ON t.pk = d.tenant_pk WHERE d.id = OLD.detection_id)
      AND day = (SELECT date(CAST(round((julianday(OLD.created_at) - 2440587.5) * 86400000) AS INTEGER) / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND d.pk > z.zone_move_det_done AND d.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = d.satellite_pk) AND o.start_ms <= CAST(round((julianday(OLD.created_at) - 2440587.5) * 86400000) AS INTEGER) ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') FROM detections d WHERE d.id = OLD.detection_id) AND user_id = OLD.user_id AND vote = OLD.vote;
    DELETE FROM stats_votes
    WHERE tenant_id = (SELECT t.id FROM detections d JOIN tenants t ON t.pk = d.tenant_pk WHERE d.id = OLD.detection_id)
      AND day = (SELECT date(CAST(round((julianday(OLD.created_at) - 2440587.5) * 86400000) AS INTEGER) / 1000 + coalesce((SELECT o.offset_s FROM zone_offsets o WHERE o.zone_pk = (SELECT CASE WHEN z.zone_move_from IS NOT NULL AND d.pk > z.zone_move_det_done AND d.pk <= z.zone_move_det_last THEN z.zone_move_from ELSE z.zone_pk END FROM satellites z WHERE z.pk = d.satellite_pk) AND o.start_ms <= CAST(round((julianday(OLD.created_at) - 2440587.5) * 86400000) AS INTEGER) ORDER BY o.start_ms DESC LIMIT 1), 0), 'unixepoch') FROM detections d WHERE d.id = OLD.detection_id) AND user_id = OLD.user_id AND vote = OLD.vote AND n <= 0;
END;

