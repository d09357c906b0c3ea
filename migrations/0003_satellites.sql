-- Satellites over MQTT: soft deletion, heartbeat counters, telemetry, job claiming and detection
-- uniqueness (a chunk never yields the same species twice, even if a job is retried).

ALTER TABLE satellites ADD COLUMN deleted_at TEXT;
ALTER TABLE satellites ADD COLUMN uptime_seconds INTEGER;
ALTER TABLE satellites ADD COLUMN filter_stats_json TEXT;
ALTER TABLE satellites ADD COLUMN outbox_stats_json TEXT;
ALTER TABLE satellites ADD COLUMN last_heartbeat_at TEXT;

CREATE TABLE telemetry (
    id                 INTEGER PRIMARY KEY,
    satellite_id       TEXT NOT NULL REFERENCES satellites(id) ON DELETE CASCADE,
    tenant_id          TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    recorded_at        TEXT NOT NULL,
    battery_level      REAL,
    storage_free_bytes INTEGER,
    cpu_temp           REAL,
    network_latency_ms REAL,
    packet_loss_pct    REAL,
    uptime_seconds     INTEGER,
    received_at        TEXT NOT NULL
);
CREATE INDEX telemetry_satellite_time ON telemetry(satellite_id, recorded_at);
CREATE INDEX telemetry_received ON telemetry(received_at);

CREATE UNIQUE INDEX detections_chunk_species ON detections(audio_chunk_id, species_code);
CREATE INDEX detections_tenant_species_day ON detections(tenant_id, species_code, detected_at);
