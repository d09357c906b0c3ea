//! Hostile samples and the watch over what they do, for `tests/security_files.rs`: files that
//! lie in their headers (a WAV of 4 GiB, a PNG of 100000 x 100000 pixels, a ZIP64 directory of a
//! million entries), archives whose paths leave them, and the peak memory and the files written
//! outside the data dir while one sample is fed.

use std::{
    collections::BTreeSet,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
};

/// The most a sample may add to the process's peak memory.
pub const MAX_GROWTH_MB: u64 = 100;

pub fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("{field} in /proc/self/status"));
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("a number of kB")
}

/// Watches one sample: the peak memory from now on, and the files under `root` outside `inside`.
pub struct Watch {
    name: String,
    rss_kb: u64,
    root: PathBuf,
    inside: PathBuf,
    before: BTreeSet<PathBuf>,
}

/// Every file and folder under `root`, but those under `skip`.
pub fn files_under(root: &Path, skip: &Path, out: &mut BTreeSet<PathBuf>) {
    let Ok(dir) = std::fs::read_dir(root) else { return };
    for entry in dir.flatten() {
        let path = entry.path();
        if path.starts_with(skip) {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            files_under(&path, skip, out);
        }
        out.insert(path);
    }
}

impl Watch {
    /// Starts watching: resets the peak (`VmHWM`) to the memory in use now.
    pub fn start(name: &str, root: &Path, inside: &Path) -> Self {
        std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak memory");
        let mut before = BTreeSet::new();
        files_under(root, inside, &mut before);
        Self { name: name.into(), rss_kb: status_kb("VmRSS:"), root: root.into(), inside: inside.into(), before }
    }

    /// Checks the sample's effects: memory, files outside the data dir, an absolute path.
    pub fn finish(self, escapes: &[PathBuf]) {
        let grown_mb = status_kb("VmHWM:").saturating_sub(self.rss_kb) / 1024;
        eprintln!("  {}: peak memory +{grown_mb} MB", self.name);
        assert!(grown_mb < MAX_GROWTH_MB, "{}: the peak memory grew by {grown_mb} MB", self.name);
        let mut after = BTreeSet::new();
        files_under(&self.root, &self.inside, &mut after);
        let written: Vec<_> = after.difference(&self.before).collect();
        assert!(written.is_empty(), "{}: written outside the data dir: {written:?}", self.name);
        for path in escapes {
            assert!(!path.exists(), "{}: {} was written", self.name, path.display());
        }
    }
}

/// A data dir two levels down in a fresh root, so that `../..` from it stays in the root.
pub fn nested_data_dir() -> (tempfile::TempDir, tempfile::TempDir) {
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(root.path().join("a")).expect("mkdir");
    let data = tempfile::Builder::new().prefix("data").tempdir_in(root.path().join("a")).expect("data dir");
    (root, data)
}

/// A unique absolute path in the system's temp dir that no sample may create.
pub fn absolute_target(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("birdhub-escape-{tag}-{}", uuid::Uuid::new_v4().simple()))
}

/// A ZIP of `names` (stored), written to `path`.
pub fn zip_file(path: &Path, names: &[&str]) {
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).expect("create"));
    let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for name in names {
        w.start_file(*name, stored).expect("entry");
        w.write_all(b"<manifest package=\"org.birdhub.app\"/>").expect("write");
    }
    w.finish().expect("finish");
}

/// A ZIP64 archive that is nothing but a central directory of `entries` bare entries (the
/// first named `AndroidManifest.xml`): 52 bytes each on disk, a table row each in a ZIP reader.
pub fn zip64_directory(path: &Path, entries: u64) {
    let mut out = BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut size = 0u64;
    for i in 0..entries {
        let name = if i == 0 { "AndroidManifest.xml".to_owned() } else { format!("{i:06x}") };
        let mut header = [0u8; 46];
        header[..4].copy_from_slice(b"PK\x01\x02");
        header[4] = 20;
        header[6] = 20;
        header[28..30].copy_from_slice(&(name.len() as u16).to_le_bytes());
        out.write_all(&header).expect("write");
        out.write_all(name.as_bytes()).expect("write");
        size += 46 + name.len() as u64;
    }
    let mut record = b"PK\x06\x06".to_vec();
    record.extend_from_slice(&44u64.to_le_bytes());
    record.extend_from_slice(&[45, 0, 45, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    for v in [entries, entries, size, 0] {
        record.extend_from_slice(&v.to_le_bytes());
    }
    record.extend_from_slice(b"PK\x06\x07\0\0\0\0");
    record.extend_from_slice(&size.to_le_bytes());
    record.extend_from_slice(&1u32.to_le_bytes());
    record.extend_from_slice(b"PK\x05\x06\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\0\0");
    out.write_all(&record).expect("write");
    out.flush().expect("flush");
}

/// A WAV header for 16-bit mono at `rate` whose `fmt ` and `data` chunks claim the given lengths,
/// followed by `data` bytes.
pub fn wav_claiming(rate: u32, fmt_len: u32, data_len: u32, data: usize) -> Vec<u8> {
    let mut w = b"RIFF\xff\xff\xff\xffWAVEfmt ".to_vec();
    w.extend_from_slice(&fmt_len.to_le_bytes());
    w.extend_from_slice(&[1, 0, 1, 0]);
    w.extend_from_slice(&rate.to_le_bytes());
    w.extend_from_slice(&(rate * 2).to_le_bytes());
    w.extend_from_slice(&[2, 0, 16, 0]);
    w.extend_from_slice(b"data");
    w.extend_from_slice(&data_len.to_le_bytes());
    w.resize(w.len() + data, 0);
    w
}

/// A PNG signature and an `IHDR` claiming `w` x `h`, then a little zlib data.
pub fn png_claiming(w: u32, h: u32) -> Vec<u8> {
    let mut b = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13];
    b.extend_from_slice(b"IHDR");
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&[8, 2, 0, 0, 0, 0, 0, 0, 0]);
    b.extend_from_slice(&[0, 0, 0, 8, b'I', b'D', b'A', b'T', 0x78, 0x9c, 0xed, 0xc1, 1, 0, 0, 0, 0, 0, 0, 0]);
    b
}

/// A baseline JPEG start whose frame header claims `w` x `h`.
pub fn jpeg_claiming(w: u16, h: u16) -> Vec<u8> {
    let mut b = vec![0xff, 0xd8, 0xff, 0xe0, 0, 16];
    b.extend_from_slice(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
    b.extend_from_slice(&[0xff, 0xc0, 0, 11, 8]);
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&[1, 1, 0x11, 0, 0xff, 0xd9]);
    b
}

/// A tar entry whose name goes into the header raw (so `../x` and `/x` can be made).
pub struct Entry {
    pub name: String,
    pub kind: tar::EntryType,
    pub link: Option<String>,
    pub bytes: Vec<u8>,
}

pub fn file(name: &str, bytes: &[u8]) -> Entry {
    Entry { name: name.into(), kind: tar::EntryType::Regular, link: None, bytes: bytes.to_vec() }
}

pub fn link(name: &str, kind: tar::EntryType, target: &str) -> Entry {
    Entry { name: name.into(), kind, link: Some(target.into()), bytes: Vec::new() }
}

pub fn write_backup(path: &Path, entries: impl IntoIterator<Item = Entry>) {
    let encoder = zstd::Encoder::new(std::fs::File::create(path).expect("create"), 3).expect("zstd");
    let mut tar = tar::Builder::new(encoder);
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(e.bytes.len() as u64);
        h.set_mode(0o640);
        h.set_entry_type(e.kind);
        if let Some(target) = &e.link {
            h.as_old_mut().linkname[..target.len()].copy_from_slice(target.as_bytes());
        }
        if e.name.len() <= 100 {
            h.as_old_mut().name[..e.name.len()].copy_from_slice(e.name.as_bytes());
            h.set_cksum();
            tar.append(&h, e.bytes.as_slice()).expect("append");
        } else {
            tar.append_data(&mut h, &e.name, e.bytes.as_slice()).expect("append a long name");
        }
    }
    tar.into_inner().expect("tar").finish().expect("finish");
}
