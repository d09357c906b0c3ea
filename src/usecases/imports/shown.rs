//! What a team admin reads about an uploaded import names the file they sent, never a path on
//! the hub: [`hide`] rewrites every message an upload can produce (`backup.tar:
//! data/birdnet.db: file is not a database`, not `/var/lib/birdhub/imports/scratch/unpack-…`).
//! Jobs of `birdhub import` keep the operator's own paths.

use std::path::Path;

use super::{ImportError, SourceError};

/// `e` with [`hide`] applied to every text it carries (the variant, so the status and the code a
/// client sees, stays).
pub fn hide_error(e: ImportError, data_dir: &Path, name: &str) -> ImportError {
    let h = |t: String| hide(&t, data_dir, name);
    match e {
        ImportError::Source(SourceError::NotFound { path, expected, found }) => {
            SourceError::NotFound { path: h(path), expected: h(expected), found: h(found) }.into()
        }
        ImportError::Source(SourceError::UnknownSchema { path, expected, found }) => {
            SourceError::UnknownSchema { path: h(path), expected: h(expected), found: h(found) }.into()
        }
        ImportError::Source(SourceError::WrongKind { path, expected, found }) => {
            SourceError::WrongKind { path: h(path), expected: h(expected), found: h(found) }.into()
        }
        ImportError::Source(SourceError::Unreadable { path, message }) => {
            SourceError::Unreadable { path: h(path), message: h(message) }.into()
        }
        ImportError::Archive(m) => ImportError::Archive(h(m)),
        ImportError::Failed(m) => ImportError::Failed(h(m)),
        other => other,
    }
}

/// `text` with every path under the hub's data directory replaced: the upload itself and a WAL
/// copy of it by `name`, a path inside an unpacked archive by `name: <path inside>`, anything
/// else of the data directory by "a file on the hub".
pub fn hide(text: &str, data_dir: &Path, name: &str) -> String {
    let mut roots = vec![data_dir.display().to_string()];
    if let Ok(c) = std::fs::canonicalize(data_dir) {
        roots.push(c.display().to_string());
    }
    // The longer first, so a canonical root that extends the given one is not cut in two.
    roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
    roots.retain(|r| !r.is_empty() && r != "/");
    let mut out = text.to_owned();
    for root in &roots {
        out = replace_paths(&out, root, name);
    }
    out
}

fn replace_paths(text: &str, root: &str, name: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(root) {
        out.push_str(&rest[..at]);
        let after = &rest[at + root.len()..];
        let (shown, used) = one_path(after, name);
        out.push_str(&shown);
        rest = &after[used..];
    }
    out.push_str(rest);
    out
}

/// What a path that starts at the data directory shows as, and how much of `after` it was.
fn one_path(after: &str, name: &str) -> (String, usize) {
    let id_chars = |s: &str| s.find(|c: char| !(c.is_ascii_hexdigit() || c == '-')).unwrap_or(s.len());
    for (prefix, inside) in
        [("/imports/uploads/", false), ("/imports/scratch/unpack-", true), ("/imports/scratch/birdnet-go-", false)]
    {
        let Some(tail) = after.strip_prefix(prefix) else { continue };
        let mut used = prefix.len() + id_chars(tail);
        let tail = &after[used..];
        if !inside {
            // The directory's one file (the upload, or the copied database and its -wal).
            used +=
                tail.strip_prefix('/').map_or(0, |t| 1 + if t.starts_with(name) { name.len() } else { path_len(t) });
            return (name.to_owned(), used);
        }
        return match tail.strip_prefix('/') {
            Some(t) => {
                let len = path_len(t);
                (format!("{name}: {}", &t[..len]), used + 1 + len)
            }
            None => (name.to_owned(), used),
        };
    }
    ("a file on the hub".to_owned(), path_len(after))
}

/// How far a path runs in a message: to a space followed by nothing path-like, a quote, a
/// colon and space, a comma and space, or the end.
fn path_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' | b'\'' | b'\n' | b')' => return i,
            b':' | b',' | b';' if bytes.get(i + 1).is_none_or(|b| *b == b' ') => return i,
            b' ' => return i,
            _ => i += 1,
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_paths_become_the_uploaded_name() {
        let data = Path::new("/var/lib/birdhub");
        let id = "0b7e6a2c-1f00-4a00-8000-000000000001";
        let cases = [
            (
                format!("/var/lib/birdhub/imports/uploads/{id}/birds.db: file is not a database"),
                "backup.tar: file is not a database",
            ),
            (
                format!("no database at /var/lib/birdhub/imports/scratch/unpack-12-{id}/data/birdnet.db, found x"),
                "no database at backup.tar: data/birdnet.db, found x",
            ),
            (format!("/var/lib/birdhub/imports/scratch/birdnet-go-12-{id}/birdnet.db: locked"), "backup.tar: locked"),
            ("/var/lib/birdhub/objects/x: gone".to_owned(), "a file on the hub: gone"),
            ("/home/pi/birds.db: kept".to_owned(), "/home/pi/birds.db: kept"),
        ];
        for (text, want) in cases {
            assert_eq!(hide(&text, data, "backup.tar"), want, "{text}");
        }
        let spaced = format!("/var/lib/birdhub/imports/uploads/{id}/my backup.tar: damaged");
        assert_eq!(hide(&spaced, data, "my backup.tar"), "my backup.tar: damaged");
    }
}
