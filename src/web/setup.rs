//! The first-run setup code: on a hub with no account, a one-time code is printed to the log (and
//! so to `journalctl -u birdhub`) and written to `<data>/setup-code` (mode 0600, for the package's
//! post-install message). Creating the first account needs it, so the first person on the LAN
//! cannot claim someone else's hub. It is spent with the first account.

use std::{path::PathBuf, sync::Mutex};

use subtle::ConstantTimeEq;

use crate::auth::tokens;

pub struct SetupCode {
    code: Mutex<Option<String>>,
    file: PathBuf,
}

impl SetupCode {
    /// A fresh code when the hub has no account (`needed`), else none.
    pub fn new(data_dir: &std::path::Path, needed: bool) -> Self {
        let file = data_dir.join("setup-code");
        let code = needed.then(|| {
            // 10 characters from an alphabet without look-alikes, grouped for reading aloud.
            let alphabet = b"23456789ABCDEFGHJKLMNPQRSTUVWXYZ";
            let raw = hex::decode(tokens::random_hex(10)).unwrap_or_default();
            let s: String = raw.iter().map(|b| alphabet[(*b as usize) % alphabet.len()] as char).collect();
            format!("{}-{}", &s[..5], &s[5..])
        });
        match &code {
            Some(c) => {
                if let Err(e) = write_private(&file, c) {
                    tracing::warn!(error = %e, file = %file.display(), "could not write the setup code file");
                }
                tracing::warn!(
                    setup_code = %c,
                    "no account yet: open the dashboard and create the first account with setup code {c}"
                );
            }
            None => {
                let _ = std::fs::remove_file(&file);
            }
        }
        Self { code: Mutex::new(code), file }
    }

    /// Whether a setup code is waiting to be used.
    pub fn pending(&self) -> bool {
        self.code.lock().map(|c| c.is_some()).unwrap_or(false)
    }

    /// Whether the first-run page should show: a code is pending and the hub still has no
    /// account (one made with `birdhub admin create-user` meanwhile spends the code).
    pub async fn still_needed(&self, store: &crate::store::Store) -> bool {
        if !self.pending() {
            return false;
        }
        match crate::usecases::first_run::needs_setup(store).await {
            Ok(true) => true,
            Ok(false) => {
                self.spend();
                false
            }
            Err(_) => false,
        }
    }

    /// Constant-time check of a typed code (case and dashes ignored).
    pub fn matches(&self, typed: &str) -> bool {
        let norm = |s: &str| s.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_uppercase();
        let Ok(guard) = self.code.lock() else { return false };
        let Some(code) = guard.as_deref() else { return false };
        let (a, b) = (norm(code), norm(typed));
        a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
    }

    /// The code is spent: forget it and remove its file.
    pub fn spend(&self) {
        if let Ok(mut c) = self.code.lock() {
            *c = None;
        }
        let _ = std::fs::remove_file(&self.file);
    }
}

fn write_private(path: &std::path::Path, code: &str) -> std::io::Result<()> {
    use std::{io::Write, os::unix::fs::OpenOptionsExt};
    let mut f = std::fs::OpenOptions::new().create(true).write(true).truncate(true).mode(0o600).open(path)?;
    writeln!(f, "{code}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_is_written_privately_matches_loosely_and_is_spent_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let code = SetupCode::new(dir.path(), true);
        let written = std::fs::read_to_string(dir.path().join("setup-code")).expect("file");
        let typed = written.trim().to_lowercase().replace('-', " ");
        assert!(code.matches(&typed), "case, dashes and spaces do not matter");
        assert!(!code.matches("AAAAA-AAAAA"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("setup-code")).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        code.spend();
        assert!(!code.pending() && !code.matches(written.trim()));
        assert!(!dir.path().join("setup-code").exists());
        assert!(!SetupCode::new(dir.path(), false).pending(), "a hub with accounts has no code");
    }
}
