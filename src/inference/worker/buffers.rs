//! Buffers an inference thread reuses from chunk to chunk: the WAV file's bytes and the decoded
//! samples. A chunk is 288 KB of WAV and 576 KB of samples; allocated fresh, each is mapped from
//! the kernel and faulted in page by page, which cost the hub more than its SQLite work per chunk.

use std::{cell::RefCell, io::Read, path::Path};

/// Sample buffers kept per thread: a batch's worth.
const KEEP: usize = super::BATCH as usize;

thread_local! {
    static FILE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static SPARE: RefCell<Vec<Vec<f32>>> = const { RefCell::new(Vec::new()) };
}

/// Reads the file at `path` into this thread's byte buffer and runs `f` on its contents.
pub(super) fn with_file<T>(path: &Path, f: impl FnOnce(&[u8]) -> T) -> std::io::Result<T> {
    FILE.with_borrow_mut(|bytes| {
        bytes.clear();
        std::fs::File::open(path)?.read_to_end(bytes)?;
        Ok(f(bytes))
    })
}

/// A sample buffer to fill (empty; with room from an earlier chunk when one was given back).
pub(super) fn take() -> Vec<f32> {
    SPARE.with_borrow_mut(|spare| spare.pop()).unwrap_or_default()
}

/// Keeps a chunk's sample buffer for the next one.
pub(super) fn give_back(mut samples: Vec<f32>) {
    samples.clear();
    SPARE.with_borrow_mut(|spare| {
        if spare.len() < KEEP {
            spare.push(samples);
        }
    });
}
