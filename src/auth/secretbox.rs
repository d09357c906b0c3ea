//! Secrets at rest (SPEC 5.3.5): AES-256-GCM under `MFA_ENCRYPTION_KEY`, a fresh random nonce per
//! value. A sealed value is `v1:` + base64(nonce ‖ ciphertext ‖ tag). Opening it with another key
//! fails: the tag does not match, and nothing is ever re-sealed under a new key behind the user's back.

use aes_gcm::{
    Aes256Gcm, Key, Nonce,
    aead::{Aead, AeadCore, KeyInit, OsRng},
};
use base64::Engine;

const PREFIX: &str = "v1:";
const NONCE_BYTES: usize = 12;

/// Seals and opens secrets with the hub's key.
#[derive(Clone)]
pub struct SecretBox {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoxError {
    #[error("the MFA encryption key must be 64 hex characters (32 bytes)")]
    BadKey,
    #[error("a stored secret is not in the sealed format")]
    Malformed,
    #[error(
        "a stored secret does not open with this MFA_ENCRYPTION_KEY: the key differs from the one it was sealed \
         with (restore the old key from secrets.toml or the environment)"
    )]
    WrongKey,
}

impl SecretBox {
    /// The box for a 64-hex-character key.
    pub fn from_hex(key: &str) -> Result<Self, BoxError> {
        let bytes = hex::decode(key.trim()).map_err(|_| BoxError::BadKey)?;
        if bytes.len() != 32 {
            return Err(BoxError::BadKey);
        }
        Ok(Self { cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&bytes)) })
    }

    /// Seals `plain` with a fresh nonce.
    pub fn seal(&self, plain: &[u8]) -> String {
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        // Encryption into a Vec cannot fail for inputs this small (the only error is a length overflow).
        let sealed = self.cipher.encrypt(&nonce, plain).unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        format!("{PREFIX}{}", base64::engine::general_purpose::STANDARD.encode(out))
    }

    /// Opens a value sealed by [`SecretBox::seal`] under the same key.
    pub fn open(&self, sealed: &str) -> Result<Vec<u8>, BoxError> {
        let body = sealed.strip_prefix(PREFIX).ok_or(BoxError::Malformed)?;
        let raw = base64::engine::general_purpose::STANDARD.decode(body).map_err(|_| BoxError::Malformed)?;
        if raw.len() <= NONCE_BYTES {
            return Err(BoxError::Malformed);
        }
        let (nonce, ct) = raw.split_at(NONCE_BYTES);
        self.cipher.decrypt(Nonce::from_slice(nonce), ct).map_err(|_| BoxError::WrongKey)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    #[test]
    fn seals_with_a_fresh_nonce_and_opens_only_with_the_same_key() {
        let b = SecretBox::from_hex(KEY).expect("key");
        let (one, two) = (b.seal(b"JBSWY3DPEHPK3PXP"), b.seal(b"JBSWY3DPEHPK3PXP"));
        assert_ne!(one, two, "a fresh nonce per value");
        assert!(!one.contains("JBSWY3DPEHPK3PXP"));
        assert_eq!(b.open(&one).expect("open"), b"JBSWY3DPEHPK3PXP");
        let other = SecretBox::from_hex(&KEY.replace("00", "ff")).expect("key");
        assert_eq!(other.open(&one), Err(BoxError::WrongKey));
        assert_eq!(b.open("plain"), Err(BoxError::Malformed));
        let mut tampered = one.clone();
        tampered.pop();
        tampered.push(if one.ends_with('A') { 'B' } else { 'A' });
        assert!(b.open(&tampered).is_err());
        assert_eq!(SecretBox::from_hex("abcd").err(), Some(BoxError::BadKey));
    }
}
