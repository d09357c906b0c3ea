-- Issue 36 (defect 20): a species' first detection for the team is its own flag, no longer a
-- kind of "rare". `is_rare` now means only "not expected here" (the range model's verdict), so
-- `special: rare` alert rules stop firing for garden birds on their first day.
--
-- The rows judged before: a first record was stored as `is_rare = 1, rare_reason =
-- 'first_record_for_team'`. It keeps its first-record mark, and is rare only when the range model
-- did not expect it (`expected_here = 0`).
ALTER TABLE detections ADD COLUMN is_first_for_team INTEGER NOT NULL DEFAULT 0;
UPDATE detections
SET is_first_for_team = 1,
    is_rare = coalesce(expected_here = 0, 0),
    rare_reason = CASE WHEN expected_here = 0 THEN 'not_expected_here' END
WHERE rare_reason = 'first_record_for_team';
