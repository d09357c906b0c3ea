-- The satellite monitor (SPEC 3, 8): when it marked a satellite offline, so an outage is announced
-- once (on the way down and on the way back), not on every cycle. NULL: online, or never seen.
ALTER TABLE satellites ADD COLUMN offline_since TEXT;
