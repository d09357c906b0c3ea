//! Whether an uploaded file is an APK, read with fixed bounds: at most the last 64 KiB (to find the
//! end record) and a central directory of at most [`MAX_DIRECTORY_BYTES`], walked in place. A ZIP
//! reader that builds a table of every entry would hold hundreds of bytes per entry, and a 200 MB
//! upload of bare 50-byte directory entries (ZIP64 lifts the 65,535 cap) made it hold gigabytes.
//! Android installs no ZIP64 APK and wants the central directory right before the end record, so
//! anything else is refused as not an APK.

use std::{
    fs::File,
    io::{Read, Seek, SeekFrom},
};

/// The largest central directory read (65,535 entries of names up to ~200 bytes).
pub const MAX_DIRECTORY_BYTES: u64 = 16 << 20;
/// The end of central directory record without its comment.
const END_LEN: usize = 22;
const END_SIGNATURE: &[u8; 4] = b"PK\x05\x06";
const ZIP64_LOCATOR_SIGNATURE: &[u8; 4] = b"PK\x06\x07";
const ZIP64_LOCATOR_LEN: u64 = 20;
const ENTRY_SIGNATURE: &[u8; 4] = b"PK\x01\x02";
const ENTRY_LEN: usize = 46;
/// The name every APK has at its root.
const MANIFEST: &[u8] = b"AndroidManifest.xml";

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn read_at(file: &mut File, at: u64, len: usize) -> Result<Vec<u8>, String> {
    let mut buf = vec![0; len];
    file.seek(SeekFrom::Start(at)).and_then(|_| file.read_exact(&mut buf)).map_err(|e| format!("reading it: {e}"))?;
    Ok(buf)
}

/// `Ok(true)` when the file is a plain ZIP whose central directory names `AndroidManifest.xml`,
/// `Ok(false)` when it is a ZIP without one, `Err(why)` when it is no ZIP this hub reads.
pub fn names_manifest(file: &mut File) -> Result<bool, String> {
    let len = file.metadata().map_err(|e| format!("reading it: {e}"))?.len();
    if len < END_LEN as u64 {
        return Err("not a ZIP archive (too short)".into());
    }
    let tail_len = len.min((END_LEN + usize::from(u16::MAX)) as u64);
    let tail_start = len - tail_len;
    let tail = read_at(file, tail_start, tail_len as usize)?;
    // The end record is the one whose comment runs exactly to the end of the file.
    let at = (0..=tail.len() - END_LEN)
        .rev()
        .find(|&p| {
            &tail[p..p + 4] == END_SIGNATURE
                && u16_at(&tail, p + 20).is_some_and(|c| p + END_LEN + usize::from(c) == tail.len())
        })
        .ok_or("not a ZIP archive (no end of central directory record)")?;
    let end = &tail[at..];
    let field = |off| u16_at(end, off).unwrap_or(0);
    let (disk, directory_disk, here, entries) = (field(4), field(6), field(8), field(10));
    let size = u32_at(end, 12).unwrap_or(0);
    let offset = u32_at(end, 16).unwrap_or(0);
    let end_at = tail_start + at as u64;
    if disk != 0 || directory_disk != 0 || here != entries {
        return Err("a multi-disk ZIP archive".into());
    }
    let locator = end_at.checked_sub(ZIP64_LOCATOR_LEN).map(|p| read_at(file, p, 4)).transpose()?;
    if entries == u16::MAX
        || size == u32::MAX
        || offset == u32::MAX
        || locator.is_some_and(|l| l == ZIP64_LOCATOR_SIGNATURE)
    {
        return Err("a ZIP64 archive (Android installs no ZIP64 APK)".into());
    }
    if u64::from(offset) + u64::from(size) != end_at {
        return Err("the central directory is not where the end record says".into());
    }
    if u64::from(size) > MAX_DIRECTORY_BYTES {
        return Err(format!("the central directory is {size} bytes; at most {MAX_DIRECTORY_BYTES}"));
    }
    let directory = read_at(file, u64::from(offset), size as usize)?;
    let mut found = false;
    let mut p = 0usize;
    for _ in 0..entries {
        let broken = || "a broken central directory entry".to_owned();
        if directory.get(p..p + 4) != Some(ENTRY_SIGNATURE) {
            return Err(broken());
        }
        let (name, extra, comment) =
            (u16_at(&directory, p + 28), u16_at(&directory, p + 30), u16_at(&directory, p + 32));
        let (Some(name), Some(extra), Some(comment)) = (name, extra, comment) else { return Err(broken()) };
        let name_at = p + ENTRY_LEN;
        let name = directory.get(name_at..name_at + usize::from(name)).ok_or_else(broken)?;
        found |= name == MANIFEST;
        p = name_at + name.len() + usize::from(extra) + usize::from(comment);
        if p > directory.len() {
            return Err(broken());
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn zip_of(names: &[&str]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for name in names {
            w.start_file(*name, zip::write::SimpleFileOptions::default()).expect("entry");
            w.write_all(b"x").expect("write");
        }
        w.finish().expect("finish").into_inner()
    }

    fn check(bytes: &[u8]) -> Result<bool, String> {
        let mut file = tempfile::tempfile().expect("tempfile");
        file.write_all(bytes).expect("write");
        names_manifest(&mut file)
    }

    #[test]
    fn a_zip_names_its_manifest_or_not() {
        assert_eq!(check(&zip_of(&["AndroidManifest.xml", "classes.dex"])), Ok(true));
        assert_eq!(check(&zip_of(&["classes.dex", "res/AndroidManifest.xml"])), Ok(false));
        let mut commented = zip_of(&["a", "AndroidManifest.xml"]);
        let n = commented.len();
        commented[n - 2..].copy_from_slice(&3u16.to_le_bytes());
        commented.extend_from_slice(b"hey");
        assert_eq!(check(&commented), Ok(true));
    }

    #[test]
    fn anything_but_a_plain_zip_is_refused() {
        assert!(check(b"").is_err());
        assert!(check(b"just some text, not a zip, long enough to look").is_err());
        let good = zip_of(&["AndroidManifest.xml"]);
        assert!(check(&good[..good.len() - 1]).is_err(), "truncated");
        let mut far = good.clone();
        let n = far.len();
        far[n - 6..n - 2].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(check(&far).is_err(), "ZIP64 marker");
        let mut lying = good.clone();
        lying[n - 12] = 7; // seven entries claimed, one there
        lying[n - 14] = 7;
        assert!(check(&lying).is_err(), "more entries than the directory holds");
    }
}
