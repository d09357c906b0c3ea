-- Heartbeats are stored as the device sent them: a state or stream this hub does not know yet
-- (a newer satellite) is kept, not refused, so the device does not show as offline. The two
-- columns lose their CHECK constraints. SQLite cannot drop a constraint in place, and rebuilding
-- `satellites` with foreign keys on would cascade-delete its children; so each column is renamed,
-- re-added without the CHECK, copied, and the old one dropped (DROP COLUMN rewrites the table
-- without firing foreign-key actions).
ALTER TABLE satellites RENAME COLUMN heartbeat_state TO heartbeat_state_checked;
ALTER TABLE satellites ADD COLUMN heartbeat_state TEXT;
UPDATE satellites SET heartbeat_state = heartbeat_state_checked;
ALTER TABLE satellites DROP COLUMN heartbeat_state_checked;

ALTER TABLE satellites RENAME COLUMN stream TO stream_checked;
ALTER TABLE satellites ADD COLUMN stream TEXT;
UPDATE satellites SET stream = stream_checked;
ALTER TABLE satellites DROP COLUMN stream_checked;
