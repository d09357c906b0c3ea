-- When the last remote update was asked for (POST /satellites/{id}/update); a heartbeat that still
-- reports another version after `releases.update_timeout_minutes` marks the update failed.
ALTER TABLE satellites ADD COLUMN update_requested_at TEXT;
