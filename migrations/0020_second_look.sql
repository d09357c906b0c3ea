-- Issue 35: detections held for a second look, and what the hub's own filters did per satellite.
--
-- A held detection waits here (never in `detections`, so no list, stat, alert or feed sees it)
-- until a window around it confirms it, which moves it to `detections`, or its wait ends, which
-- deletes it (or keeps it as 'hidden' when the team asks). `detection` is the detection as the
-- worker would have written it (JSON); `class_index` is its class in the model's output.
CREATE TABLE held_detections (
    pk           INTEGER PRIMARY KEY,
    chunk_pk     INTEGER NOT NULL REFERENCES audio_chunks(pk) ON DELETE CASCADE,
    tenant_pk    INTEGER NOT NULL REFERENCES tenants(pk) ON DELETE CASCADE,
    satellite_pk INTEGER NOT NULL REFERENCES satellites(pk) ON DELETE CASCADE,
    species_code TEXT NOT NULL,
    class_index  INTEGER NOT NULL,
    reason       TEXT NOT NULL CHECK (reason IN ('borderline', 'not_expected')),
    state        TEXT NOT NULL DEFAULT 'held' CHECK (state IN ('held', 'hidden')),
    detection    TEXT NOT NULL,
    -- milliseconds since the Unix epoch (UTC)
    deadline_at  INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    UNIQUE (chunk_pk, species_code)
) STRICT;
CREATE INDEX held_detections_due ON held_detections(state, deadline_at);
CREATE INDEX held_detections_satellite ON held_detections(satellite_pk, state);

-- Counters of the hub's filters per satellite (`hubFilterStats`): privacy drops, suppressions,
-- exclusions, second looks ...
CREATE TABLE hub_filter_counts (
    satellite_pk INTEGER NOT NULL REFERENCES satellites(pk) ON DELETE CASCADE,
    counter      TEXT NOT NULL,
    count        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (satellite_pk, counter)
) STRICT, WITHOUT ROWID;
