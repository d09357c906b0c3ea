//! Passkeys (WebAuthn): adding one to an account that has two-factor sign-in on, listing and
//! removing them, and signing in with one. The ceremony state (challenge, allowed credentials)
//! waits in the hub's cache for 5 minutes, keyed by the person or by the sign-in challenge, and is
//! taken once; it never travels in a cookie.

use std::time::Duration;

use webauthn_rs::prelude::{
    CreationChallengeResponse, Passkey, PasskeyAuthentication, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential, RequestChallengeResponse, Webauthn,
};

use super::mfa::{Factors, MfaError};
use crate::{
    auth::tokens,
    ids::UserId,
    store::{self, users::User},
};

/// How long a passkey ceremony (registration or sign-in) may take.
const CEREMONY: Duration = Duration::from_secs(5 * 60);

fn reg_key(user: UserId) -> String {
    format!("mfa:passkey-register:{user}")
}

fn auth_key(challenge: &str) -> String {
    format!("mfa:passkey-login:{challenge}")
}

async fn stored_passkeys(f: Factors<'_>, user: UserId) -> Result<Vec<(String, Passkey)>, MfaError> {
    let rows = f.store.call(move |c| store::mfa::passkey_credentials(c, user)).await?;
    Ok(rows.into_iter().filter_map(|(id, json)| serde_json::from_str(&json).ok().map(|p| (id, p))).collect())
}

/// Starts adding a passkey to an account that has two-factor sign-in on.
pub async fn passkey_register_begin(
    f: Factors<'_>,
    rp: &Webauthn,
    user: &User,
) -> Result<CreationChallengeResponse, MfaError> {
    if !user.mfa_enabled {
        return Err(MfaError::NotEnabled);
    }
    let exclude = stored_passkeys(f, user.id).await?.iter().map(|(_, p)| p.cred_id().clone()).collect();
    let (options, state) = rp
        .start_passkey_registration(user.id.0, &user.email, &user.name, Some(exclude))
        .map_err(|e| MfaError::PasskeysUnavailable(e.to_string()))?;
    f.cache.set(&reg_key(user.id), &state, Some(CEREMONY)).await;
    Ok(options)
}

/// Finishes adding a passkey with the browser's answer.
pub async fn passkey_register_finish(
    f: Factors<'_>,
    rp: &Webauthn,
    user: &User,
    response: &RegisterPublicKeyCredential,
    name: Option<String>,
) -> Result<store::mfa::Passkey, MfaError> {
    let state: PasskeyRegistration = f.cache.take(&reg_key(user.id)).await.ok_or(MfaError::NoPendingPasskey)?;
    let passkey =
        rp.finish_passkey_registration(response, &state).map_err(|e| MfaError::InvalidPasskey(e.to_string()))?;
    let json = serde_json::to_string(&passkey).map_err(|e| MfaError::InvalidPasskey(e.to_string()))?;
    let cred_id = tokens::sha256_hex(&format!("{:?}", passkey.cred_id()));
    let name = name.map(|n| n.trim().chars().take(64).collect::<String>()).filter(|n| !n.is_empty());
    let name = name.unwrap_or_else(|| "Passkey".into());
    let (id, now) = (user.id, f.clock.stamp());
    f.store.call(move |c| store::mfa::add_passkey(c, id, &name, &cred_id, &json, now)).await.map_err(|e| match e {
        store::Error::Duplicate => MfaError::InvalidPasskey("this passkey is already registered".into()),
        other => other.into(),
    })
}

pub async fn passkeys(f: Factors<'_>, user: UserId) -> Result<Vec<store::mfa::Passkey>, MfaError> {
    Ok(f.store.call(move |c| store::mfa::passkeys(c, user)).await?)
}

pub async fn delete_passkey(f: Factors<'_>, user: UserId, id: String) -> Result<(), MfaError> {
    f.store.call(move |c| store::mfa::delete_passkey(c, user, &id)).await.map_err(|e| match e {
        store::Error::NotFound => MfaError::PasskeyNotFound,
        other => other.into(),
    })
}

/// Starts a passkey sign-in for the challenge `challenge` (the mfaToken's id).
pub async fn passkey_login_begin(
    f: Factors<'_>,
    rp: &Webauthn,
    user: UserId,
    challenge: &str,
) -> Result<RequestChallengeResponse, MfaError> {
    let keys: Vec<Passkey> = stored_passkeys(f, user).await?.into_iter().map(|(_, p)| p).collect();
    if keys.is_empty() {
        return Err(MfaError::NoPasskeys);
    }
    let (options, state) =
        rp.start_passkey_authentication(&keys).map_err(|e| MfaError::PasskeysUnavailable(e.to_string()))?;
    f.cache.set(&auth_key(challenge), &state, Some(CEREMONY)).await;
    Ok(options)
}

/// Finishes a passkey sign-in; the credential's counter is stored.
pub async fn passkey_login_finish(
    f: Factors<'_>,
    rp: &Webauthn,
    user: UserId,
    challenge: &str,
    response: &PublicKeyCredential,
) -> Result<(), MfaError> {
    let state: PasskeyAuthentication = f.cache.take(&auth_key(challenge)).await.ok_or(MfaError::NoPendingPasskey)?;
    let result =
        rp.finish_passkey_authentication(response, &state).map_err(|e| MfaError::InvalidPasskey(e.to_string()))?;
    let now = f.clock.stamp();
    for (id, mut key) in stored_passkeys(f, user).await? {
        if key.cred_id() == result.cred_id() {
            key.update_credential(&result);
            let json = serde_json::to_string(&key).unwrap_or_default();
            f.store.call(move |c| store::mfa::passkey_used(c, user, &id, &json, now)).await?;
            return Ok(());
        }
    }
    // The credential was deleted while the ceremony ran.
    Err(MfaError::InvalidPasskey("this passkey is no longer registered".into()))
}
