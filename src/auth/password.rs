//! Passwords: argon2id hashes in PHC format, the strength rule, and generated passwords.
//!
//! The rule: 10 to 256 characters, not all the same character. Length beats composition rules.

use argon2::{Argon2, PasswordHasher, PasswordVerifier};
use rand::Rng;

pub const MIN_LEN: usize = 10;
pub const MAX_LEN: usize = 256;

/// Why a password was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeakPassword {
    #[error("password must be at least {MIN_LEN} characters")]
    TooShort,
    #[error("password must be at most {MAX_LEN} characters")]
    TooLong,
    #[error("password must not be one repeated character")]
    Repetitive,
}

pub fn check_strength(password: &str) -> Result<(), WeakPassword> {
    let n = password.chars().count();
    if n < MIN_LEN {
        return Err(WeakPassword::TooShort);
    }
    if n > MAX_LEN {
        return Err(WeakPassword::TooLong);
    }
    let mut chars = password.chars();
    let first = chars.next();
    if chars.all(|c| Some(c) == first) {
        return Err(WeakPassword::Repetitive);
    }
    Ok(())
}

/// An argon2id PHC string (`$argon2id$v=19$m=19456,t=2,p=1$...`) with a fresh random salt.
/// CPU-heavy (tens of milliseconds): call it from a blocking thread.
pub fn hash(password: &str) -> anyhow::Result<String> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing password: {e}"))
}

/// Whether `password` matches the stored PHC string (constant-time inside argon2).
pub fn verify(password: &str, phc: &str) -> bool {
    Argon2::default().verify_password(password.as_bytes(), phc).is_ok()
}

/// A random 20-character password without look-alike characters.
pub fn generate() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut rng = rand::rng();
    (0..20).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_and_are_salted() {
        let a = hash("correct horse battery").expect("hash");
        let b = hash("correct horse battery").expect("hash");
        assert!(a.starts_with("$argon2id$"));
        assert_ne!(a, b, "each hash has its own salt");
        assert!(verify("correct horse battery", &a));
        assert!(!verify("correct horse batterz", &a));
        assert!(!verify("anything", "not a phc string"));
    }

    #[test]
    fn strength_rule() {
        assert_eq!(check_strength("short"), Err(WeakPassword::TooShort));
        assert_eq!(check_strength(&"a".repeat(12)), Err(WeakPassword::Repetitive));
        assert_eq!(check_strength(&"ab".repeat(200)), Err(WeakPassword::TooLong));
        assert_eq!(check_strength("ten chars!"), Ok(()));
        let generated = generate();
        assert_eq!(generated.len(), 20);
        assert_eq!(check_strength(&generated), Ok(()));
    }
}
