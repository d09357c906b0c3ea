//! Random secrets, their SHA-256 fingerprints, and session JWTs (HS256).

use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ids::UserId;

/// How long a login session lasts.
pub const SESSION_DAYS: i64 = 7;
/// How long an MFA challenge token (`mfaToken`) lasts.
pub const MFA_TOKEN_MINUTES: i64 = 5;
/// The session cookie's name.
pub const SESSION_COOKIE: &str = "birdhub_session";

/// `n` random bytes as lowercase hex (API keys, reset and invite tokens).
pub fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// SHA-256 of `secret` as lowercase hex: how tokens and API keys are stored.
pub fn sha256_hex(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// What a JWT is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenKind {
    /// A login session.
    Session,
    /// A password was accepted; a second factor is still due.
    Mfa,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    pub sub: UserId,
    /// The session row (for `Session`) or the challenge id (for `Mfa`).
    pub sid: String,
    pub typ: TokenKind,
    pub iat: i64,
    pub exp: i64,
}

pub fn sign(secret: &str, claims: &Claims) -> anyhow::Result<String> {
    Ok(jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &EncodingKey::from_secret(secret.as_bytes()))?)
}

/// Verifies signature and type; expiry is checked against `now` (the hub's clock).
pub fn verify(secret: &str, token: &str, kind: TokenKind, now: DateTime<Utc>) -> Option<Claims> {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.validate_exp = false; // checked below against the hub's clock
    validation.required_spec_claims.clear();
    let data = jsonwebtoken::decode::<Claims>(token, &DecodingKey::from_secret(secret.as_bytes()), &validation).ok()?;
    let c = data.claims;
    (c.typ == kind && c.exp > now.timestamp()).then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_with_the_right_secret_kind_and_time() {
        let now = Utc::now();
        let claims = Claims {
            sub: UserId::new(),
            sid: "s1".into(),
            typ: TokenKind::Session,
            iat: now.timestamp(),
            exp: now.timestamp() + 60,
        };
        let t = sign("secret", &claims).expect("sign");
        assert!(verify("secret", &t, TokenKind::Session, now).is_some());
        assert!(verify("other", &t, TokenKind::Session, now).is_none(), "forged");
        assert!(verify("secret", &t, TokenKind::Mfa, now).is_none(), "wrong kind");
        assert!(verify("secret", &t, TokenKind::Session, now + chrono::Duration::seconds(61)).is_none(), "expired");
        assert_eq!(random_hex(32).len(), 64);
        assert_eq!(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
