//! Where a BirdNET-Go station's clips are, and which file a row's `clip_name` means
//! (IMPORTS.md B.5), plus the few `config.yaml` keys the importer reads.

use std::collections::BTreeMap;
use std::path::Path;

use crate::usecases::imports::{boundary::SourceRoot, peer::ClipRef};

/// The scalar keys of a `config.yaml` as dotted paths (`realtime.audio.export.path`). BirdNET-Go
/// writes a plain block mapping; lists, anchors and multi-line scalars are skipped, which is
/// enough for the handful of keys read here.
pub(super) fn yaml_keys(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('-') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        let Some((key, rest)) = trimmed.split_once(':') else { continue };
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        let key = key.trim().trim_matches(|c| c == '"' || c == '\'').to_lowercase();
        let value = strip_comment(rest.trim());
        if value.is_empty() {
            stack.push((indent, key));
            continue;
        }
        let mut path: Vec<&str> = stack.iter().map(|(_, k)| k.as_str()).collect();
        path.push(&key);
        out.insert(path.join("."), unquote(value).to_owned());
    }
    out
}

fn strip_comment(v: &str) -> &str {
    if v.starts_with('"') || v.starts_with('\'') {
        return v;
    }
    v.split(" #").next().unwrap_or(v).trim()
}

fn unquote(v: &str) -> &str {
    let v = v.trim();
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|s| s.strip_suffix(q)) {
            return inner;
        }
    }
    v
}

/// The clips directory of a station, and the export path its config names (old rows carry
/// it as a prefix of `clip_name`).
#[derive(Debug, Clone)]
pub(super) struct ClipRoot {
    /// The clips directory, canonical and inside what was handed over; `None` when there is none.
    pub(super) root: Option<SourceRoot>,
    /// `realtime.audio.export.path` as configured (may be absolute on the old machine).
    pub(super) export: Option<String>,
}

impl ClipRoot {
    /// `base` is the directory the database was found in. Tried in order: the configured export
    /// path (absolute, or relative to `base`), a directory of the export path's last name beside
    /// the database, then `clips/` beside it. Only a directory that resolves inside `within`
    /// (what was handed over) counts: the config is the source's own, as hostile as its rows.
    pub(super) fn find(base: &Path, export: Option<String>, within: Option<&SourceRoot>) -> Self {
        let mut candidates = Vec::new();
        if let Some(e) = export.as_deref().map(|e| e.replace('\\', "/")) {
            let p = Path::new(&e);
            if p.is_absolute() {
                candidates.push(p.to_path_buf());
            } else {
                candidates.push(base.join(p));
            }
            if let Some(name) = p.file_name() {
                candidates.push(base.join(name));
            }
        }
        candidates.push(base.join("clips"));
        let root = within.and_then(|w| candidates.iter().find_map(|p| w.subdir(p)));
        Self { root, export }
    }

    /// The file a row's `clip_name` names: `None` when the row has no clip. A name that resolves
    /// outside the clips directory (a link out) is missing.
    pub(super) fn resolve(&self, clip_name: Option<&str>) -> Option<ClipRef> {
        let raw = clip_name.map(str::trim).filter(|c| !c.is_empty())?;
        let Some(parts) = self.relative_parts(raw) else { return Some(ClipRef::Missing(raw.to_owned())) };
        let Some(root) = &self.root else { return Some(ClipRef::Missing(raw.to_owned())) };
        let path = parts.iter().fold(root.path().to_path_buf(), |p, c| p.join(c));
        Some(match root.file(&path) {
            Some(real) => ClipRef::Found(real),
            None if path.is_file() => ClipRef::Missing(format!("{raw} (leads outside the clips directory: not read)")),
            None => ClipRef::Missing(raw.to_owned()),
        })
    }

    /// The components of `raw` below the clips root, every one validated; `None` if any is
    /// unsafe (`..`, `.`, empty, NUL) or nothing is left.
    fn relative_parts(&self, raw: &str) -> Option<Vec<String>> {
        let unified = raw.replace('\\', "/");
        let mut rest = unified.as_str();
        let export = self.export.as_deref().map(|e| e.replace('\\', "/"));
        let export = export.as_deref().map(|e| e.trim_end_matches('/')).filter(|e| !e.is_empty());
        if let Some(e) = export.filter(|e| rest.starts_with(&format!("{e}/"))) {
            rest = &rest[e.len() + 1..];
        }
        let absolute = rest.starts_with('/') || rest.get(1..3) == Some(":/");
        let mut parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
        if absolute {
            // An absolute path of the old machine: keep what follows its export directory
            // (or `clips`), else the `YYYY/MM/file` tail, else the file name.
            let base = export.and_then(|e| e.rsplit('/').next()).unwrap_or("clips");
            if let Some(i) = parts.iter().rposition(|p| *p == base || *p == "clips") {
                parts.drain(..=i);
            } else if parts.len() >= 3 && is_digits(parts[parts.len() - 3]) && is_digits(parts[parts.len() - 2]) {
                parts.drain(..parts.len() - 3);
            } else {
                parts.drain(..parts.len().saturating_sub(1));
            }
        } else {
            let base = export.and_then(|e| e.rsplit('/').next());
            if parts.first().is_some_and(|p| Some(*p) == base || *p == "clips") && parts.len() > 1 {
                parts.remove(0);
            }
        }
        (!parts.is_empty() && parts.iter().all(|p| is_file_name(p)))
            .then(|| parts.iter().map(|p| (*p).to_owned()).collect())
    }
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// A file name may hold `:` on Linux (BirdNET-Pi's do); only `.`/`..`/NUL are refused.
fn is_file_name(p: &str) -> bool {
    p != "." && p != ".." && !p.contains('\0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_yaml_keys_are_read_by_dotted_path() {
        let yaml = "main:\n  name: \"Garden Go\" \nbirdnet:\n  latitude: 60.17 # home\n  longitude: 24.94\n\
            realtime:\n  interval: 15\n  audio:\n    source: ''\n    export:\n      enabled: true\n      path: /data/clips/\n\
            \x20     type: wav\n  birdweather:\n    id: ''\n";
        let keys = yaml_keys(yaml);
        assert_eq!(keys.get("main.name").map(String::as_str), Some("Garden Go"));
        assert_eq!(keys.get("birdnet.latitude").map(String::as_str), Some("60.17"));
        assert_eq!(keys.get("realtime.audio.export.path").map(String::as_str), Some("/data/clips/"));
        assert_eq!(keys.get("realtime.audio.export.type").map(String::as_str), Some("wav"));
        assert_eq!(keys.get("realtime.interval").map(String::as_str), Some("15"));
    }

    fn parts(export: Option<&str>, raw: &str) -> Option<Vec<String>> {
        ClipRoot { root: None, export: export.map(str::to_owned) }.relative_parts(raw)
    }

    fn v(parts: &[&str]) -> Option<Vec<String>> {
        Some(parts.iter().map(|p| (*p).to_owned()).collect())
    }

    #[test]
    fn clip_names_of_every_era_resolve_below_the_clips_root() {
        let want = v(&["2026", "05", "turdus_merula_87p_20260501T061203Z.wav"]);
        assert_eq!(parts(None, "2026/05/turdus_merula_87p_20260501T061203Z.wav"), want);
        assert_eq!(parts(None, "clips/2026/05/turdus_merula_87p_20260501T061203Z.wav"), want);
        assert_eq!(parts(Some("clips/"), "clips/2026/05/turdus_merula_87p_20260501T061203Z.wav"), want);
        assert_eq!(parts(Some("/data/clips"), "/data/clips/2026/05/turdus_merula_87p_20260501T061203Z.wav"), want);
        assert_eq!(parts(Some("/data/audio"), "audio/2026/05/turdus_merula_87p_20260501T061203Z.wav"), want);
        assert_eq!(
            parts(None, "/home/pi/birdnet-go-app/data/clips/2026/05/turdus_merula_87p_20260501T061203Z.wav"),
            want
        );
        assert_eq!(parts(None, "C:\\birdnet\\clips\\2026\\05\\turdus_merula_87p_20260501T061203Z.wav"), want);
        assert_eq!(parts(None, "/mnt/old/2026/05/turdus_merula_87p_20260501T061203Z.wav"), want);
    }

    #[test]
    fn clip_names_that_climb_out_are_refused() {
        assert_eq!(parts(None, "../../etc/passwd"), None);
        assert_eq!(parts(None, "2026/../../secret.wav"), None);
        assert_eq!(parts(None, "clips/./x.wav"), None);
    }

    #[test]
    fn a_configured_clips_directory_outside_the_source_is_ignored() {
        let dir = tempfile::tempdir().expect("dir");
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("clips")).expect("clips");
        std::fs::create_dir_all(src.join("audio")).expect("audio");
        std::fs::create_dir_all(dir.path().join("outside")).expect("outside");
        let within = SourceRoot::new(&src);
        let clips = std::fs::canonicalize(src.join("clips")).expect("canonical");
        for export in ["../outside", "/etc", "../../..", ".."] {
            let found = ClipRoot::find(&src, Some(export.into()), within.as_ref());
            assert_eq!(found.root.map(|r| r.path().to_path_buf()), Some(clips.clone()), "{export}");
        }
        let found = ClipRoot::find(&src, Some("audio".into()), within.as_ref());
        assert!(found.root.is_some_and(|r| r.path().ends_with("audio")));
        assert!(ClipRoot::find(&src, None, None).root.is_none(), "nothing outside a source");
    }

    #[test]
    fn a_missing_file_is_reported_with_the_name_the_row_gave() {
        let root = ClipRoot { root: SourceRoot::new(Path::new("/nonexistent-birdhub-clips")), export: None };
        assert_eq!(root.resolve(Some("2026/05/a.wav")), Some(ClipRef::Missing("2026/05/a.wav".into())));
        assert_eq!(root.resolve(Some("  ")), None);
        assert_eq!(root.resolve(None), None);
        assert_eq!(root.resolve(Some("../a.wav")), Some(ClipRef::Missing("../a.wav".into())));
    }
}
