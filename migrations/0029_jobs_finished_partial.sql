-- Issue 39: a queued job has no finished_at, so indexing it in inference_jobs_finished only cost
-- ingest one more page written per chunk. The index now holds finished jobs alone, which is all
-- that reads it (pruning done jobs by age, the latest finished jobs of GET /workers/jobs).
DROP INDEX inference_jobs_finished;
CREATE INDEX inference_jobs_finished ON inference_jobs(finished_at) WHERE finished_at IS NOT NULL;
