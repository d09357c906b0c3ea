//! SemVer rules for releases and `GET /system/versions`: what counts as a version, which of several
//! is the latest, and whether a device should update. Precedence follows SemVer 2.0 (build metadata
//! is ignored, a pre-release sorts before its release), so `1.2.0+b7` is no newer than `1.2.0`.

use std::cmp::Ordering;

pub use semver::Version;

/// A text that is not a SemVer version (`1.4.0`, `2.0.0-beta.1`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a SemVer version such as 1.4.0 or 2.0.0-beta.1")]
pub struct BadVersion(pub String);

/// Parses `text` (surrounding whitespace ignored; no `v` prefix).
pub fn parse(text: &str) -> Result<Version, BadVersion> {
    Version::parse(text.trim()).map_err(|_| BadVersion(text.to_owned()))
}

/// SemVer precedence of `a` against `b`.
pub fn precedence(a: &Version, b: &Version) -> Ordering {
    a.cmp_precedence(b)
}

/// Whether `latest` is newer than what the device runs.
pub fn update_available(current: &Version, latest: &Version) -> bool {
    precedence(latest, current) == Ordering::Greater
}

/// The highest of `candidates` that parse; texts that are not SemVer are skipped (devices report
/// what they like). Among equal precedence the first seen wins.
pub fn highest<'a>(candidates: impl IntoIterator<Item = &'a str>) -> Option<Version> {
    newest(candidates.into_iter().filter_map(|t| parse(t).ok()))
}

/// The highest of `versions` by precedence.
pub fn newest(versions: impl IntoIterator<Item = Version>) -> Option<Version> {
    versions.into_iter().fold(None, |best, v| match best {
        Some(b) if precedence(&v, &b) != Ordering::Greater => Some(b),
        _ => Some(v),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        parse(s).expect(s)
    }

    #[test]
    fn parses_semver_only() {
        assert_eq!(v(" 1.4.0\n"), Version::new(1, 4, 0));
        for bad in ["", "1.4", "v1.4.0", "1.4.0.1", "01.4.0", "latest", "1.4.0-"] {
            assert!(parse(bad).is_err(), "{bad:?} refused");
        }
    }

    #[test]
    fn update_available_follows_precedence() {
        let cases = [
            ("1.0.0", "1.0.1", true),
            ("1.0.1", "1.0.1", false),
            ("1.2.0", "1.10.0", true),
            ("2.0.0", "1.10.0", false),
            ("2.0.0-beta.1", "2.0.0", true),
            ("2.0.0", "2.0.0-rc.1", false),
            ("1.0.0+b1", "1.0.0+b2", false),
        ];
        for (current, latest, want) in cases {
            assert_eq!(update_available(&v(current), &v(latest)), want, "{current} -> {latest}");
        }
    }

    #[test]
    fn highest_skips_what_does_not_parse() {
        assert_eq!(highest(["1.9.0", "garbage", "1.10.0", "1.10.0-rc.1", "0.99.0"]), Some(v("1.10.0")));
        assert_eq!(highest(["nightly", ""]), None);
        assert_eq!(highest([]), None);
        assert_eq!(highest(["1.0.0+a", "1.0.0+b"]), Some(v("1.0.0+a")), "equal precedence keeps the first");
    }
}
