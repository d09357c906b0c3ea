-- Importing old BirdNET-Pi and BirdNET-Go stations (issue 38, docs/commands.md "birdhub import").

-- One import job: what was asked, how far it got, what it found. The `cursor` is the source's
-- own position (BirdNET-Pi: rowid) after the last committed batch, so an interrupted job resumes
-- there; the de-duplication keys below make a rerun from anywhere safe anyway.
CREATE TABLE imports (
    id                TEXT PRIMARY KEY,
    tenant_id         TEXT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    -- NULL until the run creates the new satellite it was asked to make
    satellite_id      TEXT REFERENCES satellites(id) ON DELETE SET NULL,
    -- the name asked for a new satellite (NULL: the station's own name)
    new_name          TEXT,
    kind              TEXT NOT NULL CHECK (kind IN ('birdnet-pi', 'birdnet-go')),
    schema            TEXT NOT NULL,
    -- the path as given (a directory, a database file or a tar backup)
    source            TEXT NOT NULL,
    -- the database actually read, and the clip root (after a tar was unpacked)
    database_path     TEXT NOT NULL,
    clips_dir         TEXT,
    -- a scratch directory this job unpacked a tar into, removed when the job ends
    scratch_dir       TEXT,
    -- the IANA zone local wall-clock times are read in
    time_zone         TEXT NOT NULL,
    dry_run           INTEGER NOT NULL DEFAULT 0 CHECK (dry_run IN (0, 1)),
    status            TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'failed')),
    actor_user_id     TEXT REFERENCES users(id) ON DELETE SET NULL,
    -- the process running the job (a second `birdhub import` of it while this one lives is refused)
    runner_pid        INTEGER,
    cursor            INTEGER NOT NULL DEFAULT 0,
    rows_total        INTEGER NOT NULL DEFAULT 0,
    rows_read         INTEGER NOT NULL DEFAULT 0,
    rows_added        INTEGER NOT NULL DEFAULT 0,
    rows_duplicate    INTEGER NOT NULL DEFAULT 0,
    rows_unmapped     INTEGER NOT NULL DEFAULT 0,
    rows_corrupt      INTEGER NOT NULL DEFAULT 0,
    clips_copied      INTEGER NOT NULL DEFAULT 0,
    clips_missing     INTEGER NOT NULL DEFAULT 0,
    clips_undecodable INTEGER NOT NULL DEFAULT 0,
    rows_per_second   REAL NOT NULL DEFAULT 0,
    clips_per_second  REAL NOT NULL DEFAULT 0,
    seconds_left      REAL,
    -- JSON lists: [{"name", "count"}], [{"at", "reason"}] and ["path"] (the last two capped)
    unmapped_json     TEXT NOT NULL DEFAULT '[]',
    corrupt_json      TEXT NOT NULL DEFAULT '[]',
    missing_json      TEXT NOT NULL DEFAULT '[]',
    error             TEXT,
    created_at        TEXT NOT NULL,
    started_at        TEXT,
    finished_at       TEXT,
    updated_at        TEXT NOT NULL
);
CREATE INDEX imports_tenant ON imports(tenant_id, created_at);

-- Every source row imported into a satellite, by the row's stable key: the de-duplication that
-- makes a rerun add nothing. Keeps what the hub has no column for (the station's threshold and
-- sensitivity when it wrote the row) and the state of the row's clip.
CREATE TABLE import_rows (
    satellite_pk  INTEGER NOT NULL,
    source_key    TEXT NOT NULL,
    detection_pk  INTEGER REFERENCES detections(pk) ON DELETE CASCADE,
    import_id     TEXT NOT NULL,
    threshold     REAL,
    sensitivity   REAL,
    -- 'copied', 'missing', 'undecodable' (kept and playable as bytes, no spectrogram) or 'none'
    clip_state    TEXT NOT NULL CHECK (clip_state IN ('copied', 'missing', 'undecodable', 'none')),
    PRIMARY KEY (satellite_pk, source_key)
) WITHOUT ROWID, STRICT;
CREATE INDEX import_rows_detection ON import_rows(detection_pk);

-- Clip files copied into the object store: several source rows can name one file; the file is
-- copied once and is one audio chunk.
CREATE TABLE import_clips (
    satellite_pk INTEGER NOT NULL,
    source_path  TEXT NOT NULL,
    chunk_pk     INTEGER NOT NULL REFERENCES audio_chunks(pk) ON DELETE CASCADE,
    undecodable  INTEGER NOT NULL DEFAULT 0 CHECK (undecodable IN (0, 1)),
    PRIMARY KEY (satellite_pk, source_path)
) WITHOUT ROWID, STRICT;

-- Imported chunks: recorded by an old station, never classified by this hub (no inference job,
-- no recording session). 0 = the hub's own chunk, 1 = an imported clip, 2 = an imported row whose
-- clip the old station no longer had: the detection needs a chunk, which has no audio (expired
-- from the start, so retention and exports pass it by; the API answers 410 `no_audio` for it, the
-- page says "audio expired").
ALTER TABLE audio_chunks ADD COLUMN imported INTEGER NOT NULL DEFAULT 0 CHECK (imported IN (0, 1, 2));

-- A comment carried over from the old station (BirdNET-Go keeps people's comments on its rows):
-- no author here; the page says "imported from BirdNET-Go". NULL for a person's comment.
ALTER TABLE comments ADD COLUMN imported_from TEXT;
