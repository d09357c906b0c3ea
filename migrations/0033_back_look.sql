-- Issue 50: a held detection whose first look was put off. While a backlog drains, a chunk's
-- neighbours are often classified at the same moment by another batch, so neither's scores are
-- there yet. Rather than classify the window shifted back at once, the hub holds the detection
-- with `back_look = 1` when the next chunk is already queued, and decides it when that chunk has
-- been classified: the previous chunk's and the next chunk's scores first, then both shifted
-- windows in one call for what they leave undecided. The decision is the same (any of the four
-- confirms); only the model calls are fewer.
ALTER TABLE held_detections ADD COLUMN back_look INTEGER NOT NULL DEFAULT 0 CHECK (back_look IN (0, 1));
