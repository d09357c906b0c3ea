//! The webhook signature (SPEC 5.6): `X-Service-Signature: sha256=<hex HMAC-SHA256 of the raw
//! body>` on every request of a channel with a secret, test sends included.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header that carries the signature.
pub const HEADER: &str = "X-Service-Signature";

const PREFIX: &str = "sha256=";

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &[u8], body: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(body);
    mac
}

/// `sha256=<lowercase hex HMAC-SHA256 of body>`.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    format!("{PREFIX}{}", hex::encode(mac(secret, body).finalize().into_bytes()))
}

/// Whether `header` is the signature of the raw `body` (the receiver's side; tests use it).
/// The comparison is constant-time; a missing header, another scheme or bad hex is `false`.
pub fn verify(secret: &[u8], body: &[u8], header: Option<&str>) -> bool {
    let Some(hex_tag) = header.map(str::trim).and_then(|h| h.strip_prefix(PREFIX)) else {
        return false;
    };
    let Ok(tag) = hex::decode(hex_tag) else {
        return false;
    };
    mac(secret, body).verify_slice(&tag).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"hook-secret";
    const BODY: &[u8] = br#"{"event":"test"}"#;
    /// `echo -n '{"event":"test"}' | openssl dgst -sha256 -hmac hook-secret`
    const EXPECTED: &str = "sha256=6e44856caf9d66c51e78076cf38ed93f77941847f27b33cc5e2882266c64659d";

    #[test]
    fn signs_like_openssl() {
        assert_eq!(sign(SECRET, BODY), EXPECTED);
        assert_eq!(
            sign(b"key", b"The quick brown fox jumps over the lazy dog"),
            "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
        );
    }

    #[test]
    fn verify_accepts_the_signature_of_the_exact_body() {
        assert!(verify(SECRET, BODY, Some(EXPECTED)));
        assert!(verify(SECRET, BODY, Some(&EXPECTED.to_uppercase().replace("SHA256=", "sha256="))));
        assert!(verify(SECRET, BODY, Some(&sign(SECRET, BODY))));
    }

    #[test]
    fn verify_rejects_tampering_and_missing_or_malformed_headers() {
        assert!(!verify(SECRET, br#"{"event":"test" }"#, Some(EXPECTED)), "body changed by one space");
        assert!(!verify(b"other-secret", BODY, Some(EXPECTED)), "another secret");
        let flipped = format!("{}0", &EXPECTED[..EXPECTED.len() - 1]);
        assert!(!verify(SECRET, BODY, Some(&flipped)), "last digit changed");
        assert!(!verify(SECRET, BODY, Some(&EXPECTED[..EXPECTED.len() - 2])), "truncated");
        assert!(!verify(SECRET, BODY, None), "missing");
        assert!(!verify(SECRET, BODY, Some("")), "empty");
        assert!(!verify(SECRET, BODY, Some(EXPECTED.trim_start_matches("sha256="))), "no scheme");
        assert!(!verify(SECRET, BODY, Some(&EXPECTED.replace("sha256=", "sha1="))), "other scheme");
        assert!(!verify(SECRET, BODY, Some("sha256=zz")), "not hex");
    }
}
