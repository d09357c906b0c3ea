//! Embeds every `migrations/NNNN_name.sql` file into the binary, in order.
//! Adding a migration is dropping a file into `migrations/`; nothing else to edit.

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
}
