//! Embeds every `migrations/NNNN_name.sql` file into the binary, in order.
//! Adding a migration is dropping a file into `migrations/`; nothing else to edit.
//! Also sets `COMPILED_BUILD_EPOCH` (Unix seconds): `SOURCE_DATE_EPOCH` when set (reproducible
//! builds, Debian), else the date of the latest git commit, else a fixed date. The hub reads it
//! as the earliest plausible chunk stamp (`domain::clock_sanity`).

use std::{env, fs, path::PathBuf};

fn main() {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("migrations");
    println!("cargo:rerun-if-changed={}", dir.display());

    let mut files: Vec<(u32, String, PathBuf)> = Vec::new();
    for entry in fs::read_dir(&dir).expect("migrations/ exists") {
        let path = entry.expect("readable migrations/ entry").path();
        let Some(file) = path.file_name().and_then(|n| n.to_str()) else { continue };
        let Some(stem) = file.strip_suffix(".sql") else { continue };
        let (num, name) =
            stem.split_once('_').unwrap_or_else(|| panic!("migration {file} must be named NNNN_name.sql"));
        let version: u32 = num.parse().unwrap_or_else(|_| panic!("migration {file} must start with a number"));
        println!("cargo:rerun-if-changed={}", path.display());
        files.push((version, name.to_owned(), path));
    }
    files.sort_by_key(|(v, _, _)| *v);
    for (i, (v, _, _)) in files.iter().enumerate() {
        assert_eq!(*v as usize, i + 1, "migrations must be numbered 1, 2, 3 ... without gaps");
    }

    let mut out = String::from(
        "/// Embedded migrations: (version, name, SQL).\npub const MIGRATIONS: &[(u32, &str, &str)] = &[\n",
    );
    for (v, name, path) in &files {
        out.push_str(&format!("    ({v}, {name:?}, include_str!({:?})),\n", path.display().to_string()));
    }
    out.push_str("];\n");
    let dest = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("migrations.rs");
    fs::write(dest, out).expect("write migrations.rs");
    println!("cargo:rustc-env=COMPILED_BUILD_EPOCH={}", build_epoch());
}

/// 2026-11-01T00:00:00Z: the build date when neither `SOURCE_DATE_EPOCH` nor git says one.
const FALLBACK_BUILD_EPOCH: i64 = 1_793_491_200;

fn build_epoch() -> i64 {
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    if let Some(secs) = env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.trim().parse().ok()) {
        return secs;
    }
    std::process::Command::new("git")
        .args(["log", "-1", "--format=%ct"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(FALLBACK_BUILD_EPOCH)
}
