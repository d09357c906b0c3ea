//! What a team admin reads when the file they uploaded is not the station they said (issue 51):
//! the file as they chose it and what it is not, in plain words ("notes.txt is not a BirdNET-Pi
//! database (birds.db)"), and, when it is the other peer's database, which peer, so the page
//! can offer the switch. Never a path on the hub ([`shown::hide`]) and never the importer's
//! schema words: those stay for `birdhub import`, whose operator reads tables and columns.

use std::path::Path;

use super::imports::{ImportError, PeerKind, SourceError, shown};

/// Why an uploaded file was refused before its job began. Each message names the file.
#[derive(Debug, thiserror::Error)]
pub enum WrongFile {
    /// An archive (or folder) with no database of the kind in it.
    #[error("{0}")]
    NoDatabase(String),
    /// Not the station's database: not SQLite at all, or another program's tables.
    #[error("{0}")]
    NotADatabase(String),
    /// The other peer's database: importing it as `other` would work.
    #[error("{message}")]
    OtherPeer { message: String, other: PeerKind },
    /// The database is damaged or cannot be opened.
    #[error("{0}")]
    Unreadable(String),
}

fn peer(kind: PeerKind) -> &'static str {
    match kind {
        PeerKind::BirdnetPi => "BirdNET-Pi",
        PeerKind::BirdnetGo => "BirdNET-Go",
    }
}

fn database(kind: PeerKind) -> &'static str {
    match kind {
        PeerKind::BirdnetPi => "a BirdNET-Pi database (birds.db)",
        PeerKind::BirdnetGo => "a BirdNET-Go database (birdnet.db)",
    }
}

/// What to choose instead.
fn hint(kind: PeerKind) -> &'static str {
    match kind {
        PeerKind::BirdnetPi => "Choose BirdNET-Pi's backup (.tar) or its birds.db.",
        PeerKind::BirdnetGo => "Choose BirdNET-Go's birdnet.db, or a .tar of its data folder.",
    }
}

fn other(kind: PeerKind) -> PeerKind {
    match kind {
        PeerKind::BirdnetPi => PeerKind::BirdnetGo,
        PeerKind::BirdnetGo => PeerKind::BirdnetPi,
    }
}

/// SQLite's reasons, as a person would say them.
fn plain_reason(message: &str) -> &'static str {
    let m = message.to_ascii_lowercase();
    if m.contains("not a database") {
        "it is not a database"
    } else if m.contains("malformed") || m.contains("corrupt") || m.contains("damaged") {
        "it is damaged"
    } else if m.contains("locked") || m.contains("busy") {
        "it is in use"
    } else {
        "it is damaged or not a database"
    }
}

/// `e`, met opening the upload `name` as a `kind` station, in words for the person who sent
/// it; an error that is not about the file itself comes back with its paths hidden.
pub fn explain(e: ImportError, data_dir: &Path, name: &str, kind: PeerKind) -> Result<WrongFile, ImportError> {
    let subject = |path: &str| shown::hide(path, data_dir, name);
    let what = database(kind);
    Ok(match e {
        ImportError::Source(SourceError::UnknownSchema { path, .. }) => {
            WrongFile::NotADatabase(format!("{} is not {what}. {}", subject(&path), hint(kind)))
        }
        ImportError::Source(SourceError::WrongKind { path, .. }) => WrongFile::OtherPeer {
            message: format!(
                "{} is a {} database, not a {} one. Choose {} under \u{201c}It comes from\u{201d} and import it again.",
                subject(&path),
                peer(other(kind)),
                peer(kind),
                peer(other(kind)),
            ),
            other: other(kind),
        },
        ImportError::Source(SourceError::NotFound { path, .. }) => {
            WrongFile::NoDatabase(format!("{} holds no {}. {}", subject(&path), &what[2..], hint(kind)))
        }
        ImportError::Source(SourceError::Unreadable { path, message }) => {
            WrongFile::Unreadable(format!("{} cannot be read as {what}: {}.", subject(&path), plain_reason(&message)))
        }
        ImportError::Source(SourceError::Sqlite(e)) => {
            WrongFile::Unreadable(format!("{name} cannot be read as {what}: {}.", plain_reason(&e.to_string())))
        }
        other => return Err(shown::hide_error(other, data_dir, name)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0b7e6a2c-1f00-4a00-8000-000000000001";

    fn said(e: SourceError, kind: PeerKind) -> String {
        let data = Path::new("/var/lib/birdhub");
        explain(ImportError::Source(e), data, "notes.txt", kind).map(|w| w.to_string()).expect("about the file")
    }

    #[test]
    fn the_file_is_named_as_chosen_in_words() {
        let path = format!("/var/lib/birdhub/imports/uploads/{ID}/notes.txt");
        let unknown = SourceError::UnknownSchema {
            path: path.clone(),
            expected: "a SQLite database (BirdNET-Pi's birds.db)".into(),
            found: "a file SQLite cannot read (file is not a database)".into(),
        };
        assert_eq!(
            said(unknown, PeerKind::BirdnetPi),
            "notes.txt is not a BirdNET-Pi database (birds.db). Choose BirdNET-Pi's backup (.tar) or its birds.db."
        );
        let wrong =
            SourceError::WrongKind { path: path.clone(), expected: "BirdNET-Pi".into(), found: "BirdNET-Go".into() };
        let text = said(wrong, PeerKind::BirdnetPi);
        assert!(text.starts_with("notes.txt is a BirdNET-Go database, not a BirdNET-Pi one."), "{text}");
        let unreadable = SourceError::Unreadable { path, message: "file is not a database".into() };
        assert_eq!(
            said(unreadable, PeerKind::BirdnetGo),
            "notes.txt cannot be read as a BirdNET-Go database (birdnet.db): it is not a database."
        );
    }

    #[test]
    fn the_other_peer_is_offered() {
        let wrong =
            SourceError::WrongKind { path: "x".into(), expected: "BirdNET-Go".into(), found: "BirdNET-Pi".into() };
        let data = Path::new("/var/lib/birdhub");
        let w = explain(ImportError::Source(wrong), data, "birds.db", PeerKind::BirdnetGo).expect("about the file");
        assert!(matches!(w, WrongFile::OtherPeer { other: PeerKind::BirdnetPi, .. }), "{w:?}");
        let busy = explain(ImportError::NoLabels, data, "birds.db", PeerKind::BirdnetGo);
        assert!(matches!(busy, Err(ImportError::NoLabels)), "not about the file");
    }
}
