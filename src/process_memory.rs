//! The process's memory: glibc's allocator, tuned before anything runs.
//!
//! ONNX Runtime builds a session from a copy of the whole model file and frees it afterwards;
//! glibc keeps such freed heap memory mapped, so an idle hub held ~95 MB it no longer used
//! (`birdhub bench memory`: 244 MB idle by default, 148 MB tuned). With a fixed
//! `MALLOC_MMAP_THRESHOLD_` ([`MMAP_THRESHOLD`], 4 MiB), blocks that large come from their own
//! mappings and go back to the kernel when freed, and glibc no longer raises the threshold after
//! such a free (which is what kept the model's copy); `MALLOC_ARENA_MAX=2` bounds the per-thread
//! heaps that the async runtime's, SQLite's and ONNX Runtime's threads would otherwise each grow.
//!
//! The threshold was 128 KiB until issue 49. Then every message buffer (a 384 KB audio message,
//! a 2.3 MB job for the remote workers) was a fresh mapping, faulted in and zeroed page by page
//! and unmapped again: about a sixth of a coordinator's CPU per chunk (1.30 against 1.09-1.20
//! ms in `bench workers`), and most of a worker's MQTT thread. At 4 MiB
//! they are reused from the heap; the model's copy (51 MB) and ORT's large arena blocks still
//! map and unmap, and the idle and after-drain figures stayed the same (docs/operations.md).
//!
//! `MALLOC_TRIM_THRESHOLD_` is the same 4 MiB ([`TRIM_THRESHOLD`], 128 KiB by default): a heap
//! gives its free top back to the kernel only past that much, so the job buffer an offer just
//! freed is still there for the next one instead of being unmapped and faulted in again (a
//! fifth of a `bench workers` run's page faults; the coordinator's CPU per chunk 0.80-0.95 ms
//! against 1.05-1.08 in interleaved runs). With two arenas it keeps at most 8 MB more.
//!
//! glibc reads these variables only when the process starts, so [`tune`] re-executes the
//! binary once with them set (same pid, arguments, descriptors and environment otherwise). A
//! value the user already set wins; `BIRDHUB_MALLOC=default` leaves the allocator alone.

use std::{os::unix::process::CommandExt, process::Command};

/// The variable that marks a tuned (or deliberately untuned) process.
pub const MARKER: &str = "BIRDHUB_MALLOC";
/// Blocks of this many bytes and more are their own mappings (4 MiB).
pub const MMAP_THRESHOLD: &str = "4194304";

/// A heap's free top is given back only past this many bytes (4 MiB).
pub const TRIM_THRESHOLD: &str = "4194304";

/// Re-executes this process with the tuned allocator unless it already runs with it. Returns
/// only when nothing needs doing or the re-execution failed (the process then runs untuned).
pub fn tune() {
    if std::env::var_os(MARKER).is_some() || std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() {
        return;
    }
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_default();
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0(arg0).args(args).env(MARKER, "tuned").env("MALLOC_MMAP_THRESHOLD_", MMAP_THRESHOLD);
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        cmd.env("MALLOC_ARENA_MAX", "2");
    }
    if std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_none() {
        cmd.env("MALLOC_TRIM_THRESHOLD_", TRIM_THRESHOLD);
    }
    let error = cmd.exec();
    eprintln!("birdhub: running with the default allocator settings ({error})");
}
