//! Passkeys (WebAuthn) through webauthn-rs. The relying party is the hub's public address: the host
//! of `http.public_url`, else the `<hostname>.local` the hub links to. Browsers allow WebAuthn only
//! in a secure context, so passkeys work on `https://<name>` or `http://localhost`, never on a bare
//! LAN address like `http://192.168.1.20:8080`; TOTP and backup codes always work.

use webauthn_rs::{
    Webauthn, WebauthnBuilder,
    prelude::{Url, WebauthnError},
};

#[derive(Debug, thiserror::Error)]
pub enum PasskeyConfigError {
    #[error(
        "passkeys need the hub to be reached by name over https (or at http://localhost); {0} is not such an \
         address. Set http.public_url to https://your-hub-name, or sign in with the authenticator app"
    )]
    NotASecureName(String),
    #[error("passkeys are not available: {0}")]
    Webauthn(String),
}

/// The relying party for `base` (the hub's public HTTP address).
pub fn relying_party(base: &str) -> Result<Webauthn, PasskeyConfigError> {
    let origin = Url::parse(base).map_err(|_| PasskeyConfigError::NotASecureName(base.to_owned()))?;
    let host = origin.host_str().unwrap_or_default().to_owned();
    let is_ip = host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[');
    let secure = origin.scheme() == "https" || host == "localhost";
    if host.is_empty() || is_ip || !secure {
        return Err(PasskeyConfigError::NotASecureName(base.to_owned()));
    }
    let webauthn_err = |e: WebauthnError| PasskeyConfigError::Webauthn(e.to_string());
    WebauthnBuilder::new(&host, &origin)
        .map_err(webauthn_err)?
        .rp_name("birdhub")
        // A hub on localhost is reached on whatever port it was started with.
        .allow_any_port(host == "localhost")
        .build()
        .map_err(webauthn_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_in_a_secure_context_are_relying_parties() {
        assert!(relying_party("https://birds.example.org").is_ok());
        assert!(relying_party("http://localhost:8080").is_ok());
        for bad in ["http://192.168.1.20:8080", "http://birdhub.local:8080", "https://10.0.0.2", "nonsense"] {
            let e = relying_party(bad).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("https"), "{bad}: {e}");
        }
    }
}
