//! Share tokens: the name of one share link (a row of `share_links`, migration 0030), signed.
//!
//! A token is `{link id}.{hex HMAC-SHA256}`, the tag over the link id and the detection id, keyed
//! by a key derived from the hub's JWT secret. The signature keeps anyone from guessing or
//! altering a token without a database read; whether the link still works (not revoked, not
//! expired, its maker still in the team) is the row's to say.
//!
//! Tokens of the first shape (`{expiry}.{tag}`, bound to no link: [`sign_audio`]) open only a
//! detection's audio, until their expiry: the iNaturalist export still writes them into its rows
//! (one per observation, for the file's readers; they keep no audio from retention). A page link
//! of that shape handed out before share links had records shows no page any more.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::ids::DetectionId;

/// How long a share link works.
pub const SHARE_DAYS: i64 = 30;

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &str, link: &str, detection: DetectionId) -> HmacSha256 {
    // Domain separation: the JWT secret also signs sessions, never this message shape.
    let mut key = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    key.update(b"birdhub share-link key v2");
    let derived = key.finalize().into_bytes();
    let mut m = HmacSha256::new_from_slice(&derived).expect("HMAC takes keys of any length");
    m.update(format!("link:{link}:detection:{detection}").as_bytes());
    m
}

/// The token of link `link` (32 hex digits) of `detection`.
pub fn sign(secret: &str, link: &str, detection: DetectionId) -> String {
    let tag = mac(secret, link, detection).finalize().into_bytes();
    format!("{link}.{}", hex::encode(tag))
}

/// The link a token names, when [`sign`] made it for `detection`. The tag is compared in
/// constant time.
pub fn verify(secret: &str, detection: DetectionId, token: &str) -> Option<String> {
    let (link, tag) = token.split_once('.')?;
    if link.len() != 32 || !link.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
        return None;
    }
    let tag = hex::decode(tag).ok()?;
    mac(secret, link, detection).verify_slice(&tag).is_ok().then(|| link.to_owned())
}

fn mac_v1(secret: &str, detection: DetectionId, expires: i64) -> HmacSha256 {
    let mut key = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    key.update(b"birdhub share-link key v1");
    let derived = key.finalize().into_bytes();
    let mut m = HmacSha256::new_from_slice(&derived).expect("HMAC takes keys of any length");
    m.update(format!("detection:{detection}:{expires}").as_bytes());
    m
}

/// An audio-only token for `detection` valid until `expires` (unix seconds), bound to no link.
pub fn sign_audio(secret: &str, detection: DetectionId, expires: i64) -> String {
    let tag = mac_v1(secret, detection, expires).finalize().into_bytes();
    format!("{expires}.{}", hex::encode(tag))
}

/// Whether `token` was made by [`sign_audio`] for `detection` and has not expired at `now`.
pub fn verify_audio(secret: &str, detection: DetectionId, token: &str, now: i64) -> bool {
    let Some((expires, tag)) = token.split_once('.') else { return false };
    let (Ok(expires), Ok(tag)) = (expires.parse::<i64>(), hex::decode(tag)) else { return false };
    expires > now && mac_v1(secret, detection, expires).verify_slice(&tag).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_forged_altered_and_old() {
        let id = DetectionId::new();
        let link = uuid::Uuid::new_v4().simple().to_string();
        let token = sign("secret", &link, id);
        assert_eq!(verify("secret", id, &token), Some(link.clone()));
        assert_eq!(verify("other secret", id, &token), None, "another hub's token");
        assert_eq!(verify("secret", DetectionId::new(), &token), None, "another detection");
        let (_, tag) = token.split_once('.').expect("dot");
        let other = uuid::Uuid::new_v4().simple().to_string();
        assert_eq!(verify("secret", id, &format!("{other}.{tag}")), None, "another link");
        assert_eq!(verify("secret", id, "garbage"), None);
        assert_eq!(verify("secret", id, &format!("{link}.zz")), None);
        assert_eq!(verify("secret", id, &format!("2000000000.{tag}")), None, "the old shape");
    }

    #[test]
    fn audio_tokens_of_the_first_shape() {
        let id = DetectionId::new();
        let token = sign_audio("secret", id, 2_000);
        assert!(verify_audio("secret", id, &token, 1_000));
        assert!(!verify_audio("secret", id, &token, 2_000), "expired at its expiry");
        assert!(!verify_audio("other secret", id, &token, 1_000));
        assert!(!verify_audio("secret", DetectionId::new(), &token, 1_000));
        let (_, tag) = token.split_once('.').expect("dot");
        assert!(!verify_audio("secret", id, &format!("9999999999.{tag}"), 1_000), "a moved expiry");
        assert_eq!(verify("secret", id, &token), None, "no page for it");
    }
}
