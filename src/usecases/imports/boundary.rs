//! The edge of what a person handed the hub: an import reads files inside the source it was
//! given (the unpacked tar, the uploaded file's directory, the directory named on the command
//! line, or the operator's `--clips DIR`) and nothing else. Every path taken from the source's
//! own contents (a clips directory its config names, a clip a row names, a symlink inside it) is
//! canonicalised first, so `..` and links cannot lead out.

use std::path::{Path, PathBuf};

/// A canonical directory; [`SourceRoot::contains`] says whether a path lies inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRoot {
    root: PathBuf,
}

impl SourceRoot {
    /// The directory `dir`, canonicalised; `None` when it does not exist or is not a directory.
    pub fn new(dir: &Path) -> Option<Self> {
        let root = std::fs::canonicalize(dir).ok()?;
        root.is_dir().then_some(Self { root })
    }

    /// The root itself (canonical).
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// `p` resolved (every link followed), when it exists and lies inside the root.
    pub fn contains(&self, p: &Path) -> Option<PathBuf> {
        let real = std::fs::canonicalize(p).ok()?;
        real.starts_with(&self.root).then_some(real)
    }

    /// `p` resolved, when it is a directory inside the root; its own [`SourceRoot`].
    pub fn subdir(&self, p: &Path) -> Option<SourceRoot> {
        let real = self.contains(p)?;
        real.is_dir().then_some(SourceRoot { root: real })
    }

    /// `p` resolved, when it is a regular file inside the root.
    pub fn file(&self, p: &Path) -> Option<PathBuf> {
        self.contains(p).filter(|r| r.is_file())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_lead_out_are_not_inside() {
        let dir = tempfile::tempdir().expect("dir");
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("clips")).expect("mkdir");
        std::fs::write(src.join("clips/a.wav"), b"RIFF").expect("clip");
        std::fs::write(dir.path().join("secret"), b"x").expect("secret");
        std::os::unix::fs::symlink(dir.path().join("secret"), src.join("clips/link.wav")).expect("link");
        std::os::unix::fs::symlink("/etc", src.join("etc")).expect("link");
        let root = SourceRoot::new(&src).expect("root");
        assert!(root.file(&src.join("clips/a.wav")).is_some());
        assert!(root.subdir(&src.join("clips")).is_some());
        assert_eq!(root.file(&src.join("clips/link.wav")), None, "a link out");
        assert_eq!(root.subdir(&src.join("etc")), None, "a link out");
        assert_eq!(root.contains(&src.join("../secret")), None, "..");
        assert_eq!(root.contains(&src.join("clips/../../secret")), None);
        assert_eq!(root.contains(Path::new("/etc/passwd")), None);
        assert_eq!(root.contains(&src.join("nothing")), None);
        let sibling = dir.path().join("src2");
        std::fs::create_dir_all(&sibling).expect("mkdir");
        assert_eq!(root.contains(&sibling), None, "a sibling that shares the name's prefix");
    }
}
