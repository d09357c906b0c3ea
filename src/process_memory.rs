//! The process's memory: glibc's allocator, tuned before anything runs.
//!
//! ONNX Runtime builds a session from a copy of the whole model file and frees it afterwards;
//! glibc keeps such freed heap memory mapped, so an idle hub held ~95 MB it no longer used
//! (`birdhub bench memory`: 244 MB idle by default, 148 MB tuned). With
//! `MALLOC_MMAP_THRESHOLD_=131072`, blocks of 128 KiB and more come from their own mappings and
//! go back to the kernel when freed; `MALLOC_ARENA_MAX=2` bounds the per-thread heaps that the
//! async runtime's, SQLite's and ONNX Runtime's threads would otherwise each grow.
//!
//! glibc reads these variables only when the process starts, so [`tune`] re-executes the
//! binary once with them set (same pid, arguments, descriptors and environment otherwise). A
//! value the user already set wins; `BIRDHUB_MALLOC=default` leaves the allocator alone.

use std::{os::unix::process::CommandExt, process::Command};

/// The variable that marks a tuned (or deliberately untuned) process.
pub const MARKER: &str = "BIRDHUB_MALLOC";

/// Re-executes this process with the tuned allocator unless it already runs with it. Returns
/// only when nothing needs doing or the re-execution failed (the process then runs untuned).
pub fn tune() {
    if std::env::var_os(MARKER).is_some() || std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() {
        return;
    }
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_default();
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0(arg0).args(args).env(MARKER, "tuned").env("MALLOC_MMAP_THRESHOLD_", "131072");
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        cmd.env("MALLOC_ARENA_MAX", "2");
    }
    let error = cmd.exec();
    eprintln!("birdhub: running with the default allocator settings ({error})");
}
