//! BirdNET-Go's reader (issue 38): the legacy `notes` schema and the v2 schema, with reviews,
//! comments and locks. Not built yet in this branch: the goapi part replaces this file.

use std::path::Path;

use super::peer::{PeerSource, SourceError};

/// Opens a BirdNET-Go data directory or database file at `path` (a copy is made under `scratch`
/// when the database is in WAL mode).
pub fn open(path: &Path, _scratch: &Path) -> Result<Box<dyn PeerSource>, SourceError> {
    Err(SourceError::UnknownSchema {
        path: path.display().to_string(),
        expected: "a BirdNET-Go database".into(),
        found: "BirdNET-Go reader not built yet".into(),
    })
}
