//! TOTP (RFC 6238) through totp-rs: SHA-1, 6 digits, 30 s steps, ±1 step of skew, which is what
//! every authenticator app (Aegis, Google Authenticator, 2FAS, 1Password, Bitwarden ...) speaks.
//! Time comes from the hub's clock, so tests can move it.

use chrono::{DateTime, Utc};
use totp_rs::{Algorithm, Builder, Secret, Totp};

/// The issuer shown in authenticator apps.
pub const ISSUER: &str = "birdhub";

#[derive(Debug, thiserror::Error)]
#[error("could not build the TOTP: {0}")]
pub struct TotpError(String);

fn build(secret: Secret, account: &str) -> Result<Totp, TotpError> {
    Builder::new()
        .with_algorithm(Algorithm::SHA1)
        .with_digits(6)
        .with_skew(1)
        .with_step_duration(30)
        .with_secret(secret)
        .with_issuer(Some(ISSUER))
        .with_account_name(account.replace(':', ""))
        .build()
        .map_err(|e| TotpError(e.to_string()))
}

/// A fresh 160-bit secret.
pub fn new_secret() -> Vec<u8> {
    Secret::generate().as_ref().to_vec()
}

/// What enrolment shows: the secret in base32 (typed by hand) and the QR code of the otpauth URI.
pub struct Enrolment {
    pub manual_key: String,
    pub otpauth_url: String,
    pub qr_data_url: String,
}

pub fn enrolment(secret: &[u8], account: &str) -> Result<Enrolment, TotpError> {
    let totp = build(Secret::from(secret.to_vec()), account)?;
    let otpauth_url = totp.to_url().map_err(|e| TotpError(e.to_string()))?;
    let png = totp.to_qr_base64().map_err(|e| TotpError(e.to_string()))?;
    Ok(Enrolment {
        manual_key: Secret::from(secret.to_vec()).to_base32(),
        otpauth_url,
        qr_data_url: format!("data:image/png;base64,{png}"),
    })
}

/// The step a 6-digit `code` matches at `now` (±1 step), if any.
pub fn matched_step(secret: &[u8], code: &str, now: DateTime<Utc>) -> Option<u64> {
    let totp = build(Secret::from(secret.to_vec()), "x").ok()?;
    let secs = u64::try_from(now.timestamp()).ok()?;
    totp.check(code, secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_within_one_step_and_the_uri_names_the_issuer() {
        let secret = b"12345678901234567890".to_vec(); // the RFC 6238 test key
        let at = DateTime::<Utc>::from_timestamp(59, 0).expect("time");
        // RFC 6238 appendix B: T = 59 s gives 94287082 (8 digits); its last 6 are the 6-digit code.
        assert_eq!(matched_step(&secret, "287082", at), Some(1));
        assert_eq!(matched_step(&secret, "287082", at + chrono::Duration::seconds(30)), Some(1), "one step late");
        assert_eq!(matched_step(&secret, "287082", at + chrono::Duration::seconds(90)), None, "three steps late");
        let e = enrolment(&secret, "ann@example.org").expect("enrolment");
        assert!(e.otpauth_url.starts_with("otpauth://totp/birdhub:ann%40example.org?"), "{}", e.otpauth_url);
        assert!(e.otpauth_url.contains("issuer=birdhub"));
        assert_eq!(e.manual_key, "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
        assert!(e.qr_data_url.starts_with("data:image/png;base64,"));
    }
}
