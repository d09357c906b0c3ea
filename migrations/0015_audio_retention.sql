-- Audio retention (issue 17): a chunk's WAV may be deleted to keep the disk from filling. The row
-- stays; `audio_expired_at` says when its audio was given up. Deleting is two steps so that a
-- crash leaves no row pointing at a missing file and no file left behind: the row is marked
-- first, then the file is deleted and `audio_deleted` set. A sweep finishes marked rows first.
ALTER TABLE audio_chunks ADD COLUMN audio_expired_at TEXT;
ALTER TABLE audio_chunks ADD COLUMN audio_deleted INTEGER NOT NULL DEFAULT 0 CHECK (audio_deleted IN (0, 1));
-- Live audio, oldest first: what a sweep walks.
CREATE INDEX audio_chunks_live_by_time ON audio_chunks(recorded_at) WHERE audio_expired_at IS NULL;
-- Marked but not yet deleted: what a sweep finishes after a crash.
CREATE INDEX audio_chunks_expiring ON audio_chunks(id) WHERE audio_expired_at IS NOT NULL AND audio_deleted = 0;

-- Until when a share link of the detection is valid; its audio is never deleted before then.
ALTER TABLE detections ADD COLUMN shared_until TEXT;
