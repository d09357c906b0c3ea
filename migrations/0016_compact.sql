-- A smaller database (issue 18). Measured with `dbstat` on the benchmark year, the detections and
-- audio chunks and their indexes are nearly all of the file. This migration removes what can go
-- without rebuilding those tables; `store::migrate` then compacts the file once (VACUUM, with
-- `auto_vacuum = INCREMENTAL` from then on) when the disk has room for it.

-- `detections_chunk (audio_chunk_id)` is a prefix of the unique `detections_chunk_species
-- (audio_chunk_id, species_code)`, which answers every lookup by chunk the same way.
DROP INDEX IF EXISTS detections_chunk;

-- A chunk's storage key is what the ingest derives from its team, satellite, UTC day and id
-- (`store::chunks::derived_key`); such keys are stored as '' and worked out again on read.
-- Keys of any other shape stay as they are.
UPDATE audio_chunks SET storage_key = ''
WHERE storage_key = 'audio/' || tenant_id || '/' || satellite_id || '/' || substr(recorded_at, 1, 10) || '/' || id || '.wav';
