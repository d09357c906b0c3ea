//! Share tokens: a detection made viewable without an account, for [`SHARE_DAYS`] days.
//!
//! A token is `{expiry unix seconds}.{hex HMAC-SHA256}` over the detection id and the expiry,
//! keyed by a key derived from the hub's JWT secret (so rotating that secret revokes every link).
//! Nothing is stored; a forged, altered or expired token simply does not verify.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::ids::DetectionId;

/// How long a share link works.
pub const SHARE_DAYS: i64 = 30;

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &str, detection: DetectionId, expires: i64) -> HmacSha256 {
    // Domain separation: the JWT secret also signs sessions, never this message shape.
    let mut key = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    key.update(b"birdhub share-link key v1");
    let derived = key.finalize().into_bytes();
    let mut m = HmacSha256::new_from_slice(&derived).expect("HMAC takes keys of any length");
    m.update(format!("detection:{detection}:{expires}").as_bytes());
    m
}

/// A token for `detection` valid until `expires` (unix seconds).
pub fn sign(secret: &str, detection: DetectionId, expires: i64) -> String {
    let tag = mac(secret, detection, expires).finalize().into_bytes();
    format!("{expires}.{}", hex::encode(tag))
}

/// Whether `token` was made by [`sign`] for `detection` and has not expired at `now`.
/// The tag is compared in constant time.
pub fn verify(secret: &str, detection: DetectionId, token: &str, now: i64) -> bool {
    let Some((expires, tag)) = token.split_once('.') else { return false };
    let (Ok(expires), Ok(tag)) = (expires.parse::<i64>(), hex::decode(tag)) else { return false };
    if expires <= now {
        return false;
    }
    mac(secret, detection, expires).verify_slice(&tag).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_forged_altered_and_expired() {
        let id = DetectionId::new();
        let token = sign("secret", id, 2_000);
        assert!(verify("secret", id, &token, 1_000));
        assert!(!verify("secret", id, &token, 2_000), "expired at its expiry");
        assert!(!verify("other secret", id, &token, 1_000), "another hub's token");
        assert!(!verify("secret", DetectionId::new(), &token, 1_000), "another detection");
        let (_, tag) = token.split_once('.').expect("dot");
        assert!(!verify("secret", id, &format!("9999999999.{tag}"), 1_000), "a moved expiry");
        assert!(!verify("secret", id, "garbage", 1_000));
        assert!(!verify("secret", id, "1.zz", 0));
    }
}
