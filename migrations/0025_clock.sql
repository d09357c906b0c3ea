-- Clock sanity for satellites (issue 37, docs/satellites.md "The satellite's clock").
-- The latest clock offset a heartbeat showed (the satellite's clock minus the hub's, ms) and
-- when it was measured; since when the satellite's clock has been wrong (one alert per episode);
-- how many of its chunks the hub re-stamped.
ALTER TABLE satellites ADD COLUMN clock_offset_ms INTEGER;
ALTER TABLE satellites ADD COLUMN clock_checked_at TEXT;
ALTER TABLE satellites ADD COLUMN clock_wrong_since TEXT;
ALTER TABLE satellites ADD COLUMN clock_corrected_chunks INTEGER NOT NULL DEFAULT 0;

-- The `recordedAt` a satellite sent for a chunk whose stamp the hub corrected (Unix ms, like
-- `recorded_at`); NULL for every chunk filed as stamped.
ALTER TABLE audio_chunks ADD COLUMN reported_recorded_at INTEGER;

-- Every team has the system rule `satellite_clock` from the start, like `satellite_offline`.
INSERT OR IGNORE INTO alert_rules (id, tenant_id, name, trigger_type, system_key, cooldown_minutes, created_at, updated_at)
SELECT lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-' ||
       substr('89ab', 1 + (random() & 3), 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))),
       id, 'Wrong satellite clock', 'absence', 'satellite_clock', 30, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
       strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
FROM tenants;
