//! What people do with second factors: enrol an authenticator app (TOTP), keep backup codes, add
//! passkeys, prove a factor at sign-in, remember a device, and turn it all off (themselves, or a
//! platform admin for them). Secrets are sealed with the hub's key; codes and cookies are stored
//! as SHA-256; passkey challenge state stays in the hub's cache, never in a cookie.

use std::time::Duration;

use serde::Serialize;

use crate::{
    auth::{
        password,
        secretbox::{BoxError, SecretBox},
        tokens, totp,
    },
    cache::Cache,
    clock::Clock,
    domain::mfa::{self as rules, CodeError},
    ids::UserId,
    store::{self, Store, users::User},
    time::Timestamp,
};

/// The hub's handles that second factors need.
#[derive(Clone, Copy)]
pub struct Factors<'a> {
    pub store: &'a Store,
    pub cache: &'a Cache,
    pub clock: &'a Clock,
    pub secrets: &'a SecretBox,
    /// The hub's bounded pool of argon2 runs (the password checks before changes).
    pub passwords: &'a password::Passwords,
}

#[derive(Debug, thiserror::Error)]
pub enum MfaError {
    #[error("two-factor sign-in is already on for this account")]
    AlreadyEnabled,
    #[error("two-factor sign-in is not on for this account; set up the authenticator app first")]
    NotEnabled,
    #[error("no set-up is waiting (it lasts 10 minutes): start again with POST /auth/mfa/totp/begin")]
    NoPendingEnrolment,
    #[error(transparent)]
    BadCode(#[from] CodeError),
    #[error("the code is not correct (check the time on the phone, or use a backup code)")]
    InvalidCode,
    #[error("this code was already used; wait for the next one")]
    Replayed,
    #[error("this backup code was already used; each works once")]
    BackupCodeUsed,
    #[error("the password is not correct")]
    WrongPassword,
    #[error("a platform admin must keep two-factor sign-in on; another platform admin can reset it")]
    PlatformAdminMustKeepMfa,
    #[error("this account has no passkeys; use the authenticator app or a backup code")]
    NoPasskeys,
    #[error("no passkey request is waiting (it lasts 5 minutes); start again")]
    NoPendingPasskey,
    #[error("the passkey answer was not accepted: {0}")]
    InvalidPasskey(String),
    #[error("{0}")]
    PasskeysUnavailable(String),
    #[error("no such passkey")]
    PasskeyNotFound,
    #[error("no such remembered device")]
    DeviceNotFound,
    #[error("no such user")]
    UserNotFound,
    #[error(
        "the hub cannot read its stored second-factor secrets: MFA_ENCRYPTION_KEY differs from the key they were \
         sealed with. Restore the original key, or have a platform admin reset this account's two-factor sign-in"
    )]
    KeyMismatch,
    #[error(transparent)]
    Store(store::Error),
}

impl From<store::Error> for MfaError {
    fn from(e: store::Error) -> Self {
        match e {
            store::Error::NotFound => Self::UserNotFound,
            other => Self::Store(other),
        }
    }
}

impl From<BoxError> for MfaError {
    fn from(_: BoxError) -> Self {
        Self::KeyMismatch
    }
}

/// What the person sees when setting up the authenticator app.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TotpSetup {
    pub qr_data_url: String,
    pub manual_key: String,
    pub otpauth_url: String,
}

fn pending_key(user: UserId) -> String {
    format!("mfa:pending:{user}")
}

/// Starts TOTP enrolment: a fresh secret waits in the cache for 10 minutes.
pub async fn begin_totp(f: Factors<'_>, user: &User) -> Result<TotpSetup, MfaError> {
    if user.mfa_enabled {
        return Err(MfaError::AlreadyEnabled);
    }
    let secret = totp::new_secret();
    let shown = totp::enrolment(&secret, &user.email).map_err(|e| MfaError::PasskeysUnavailable(e.to_string()))?;
    let ttl = Duration::from_secs(rules::PENDING_MINUTES * 60);
    f.cache.set(&pending_key(user.id), &f.secrets.seal(&secret), Some(ttl)).await;
    Ok(TotpSetup { qr_data_url: shown.qr_data_url, manual_key: shown.manual_key, otpauth_url: shown.otpauth_url })
}

/// Confirms enrolment with a first code: MFA is on, and the backup codes are returned, once.
pub async fn confirm_totp(f: Factors<'_>, user: &User, code: &str) -> Result<Vec<String>, MfaError> {
    let code = rules::totp_code(code)?;
    if user.mfa_enabled {
        return Err(MfaError::AlreadyEnabled);
    }
    let sealed: String = f.cache.get(&pending_key(user.id)).await.ok_or(MfaError::NoPendingEnrolment)?;
    let secret = f.secrets.open(&sealed)?;
    let step = totp::matched_step(&secret, &code, f.clock.now()).ok_or(MfaError::InvalidCode)?;
    let (shown, hashes) = backup_codes();
    let (id, now, stored) = (user.id, f.clock.stamp(), f.secrets.seal(&secret));
    f.store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            store::mfa::enable_totp(&tx, id, &stored, step as i64, now)?;
            store::mfa::replace_backup_codes(&tx, id, &hashes, now)?;
            tx.commit()?;
            Ok(())
        })
        .await?;
    f.cache.remove(&pending_key(user.id)).await;
    Ok(shown)
}

/// Drops a started enrolment.
pub async fn cancel_totp(f: Factors<'_>, user: UserId) {
    f.cache.remove(&pending_key(user)).await;
}

/// Ten fresh backup codes as shown, and their hashes as stored.
fn backup_codes() -> (Vec<String>, Vec<String>) {
    use rand::Rng;
    let mut rng = rand::rng();
    let shown: Vec<String> = (0..rules::BACKUP_CODES)
        .map(|_| {
            let idx: Vec<u8> = (0..10).map(|_| rng.random_range(0..rules::BACKUP_ALPHABET.len() as u8)).collect();
            rules::format_backup_code(&idx)
        })
        .collect();
    let hashes = shown.iter().filter_map(|s| rules::backup_code(s).ok()).map(|c| tokens::sha256_hex(&c)).collect();
    (shown, hashes)
}

async fn check_password(f: Factors<'_>, user: &User, given: String) -> Result<(), MfaError> {
    if f.passwords.verify(given, user.password_hash.clone()).await { Ok(()) } else { Err(MfaError::WrongPassword) }
}

/// New backup codes after the password; the old set stops working.
pub async fn regenerate_backup_codes(f: Factors<'_>, user: &User, given: String) -> Result<Vec<String>, MfaError> {
    check_password(f, user, given).await?;
    if !user.mfa_enabled {
        return Err(MfaError::NotEnabled);
    }
    let (shown, hashes) = backup_codes();
    let (id, now) = (user.id, f.clock.stamp());
    f.store.call(move |c| store::mfa::replace_backup_codes(c, id, &hashes, now)).await?;
    Ok(shown)
}

/// Turns MFA off after the password: secrets, passkeys and remembered devices are wiped, in one
/// transaction.
/// A platform admin may not (SPEC 7).
pub async fn disable(f: Factors<'_>, user: &User, given: String) -> Result<(), MfaError> {
    if user.is_platform_admin {
        return Err(MfaError::PlatformAdminMustKeepMfa);
    }
    check_password(f, user, given).await?;
    if !user.mfa_enabled {
        return Err(MfaError::NotEnabled);
    }
    let id = user.id;
    super::in_tx(f.store, move |tx| Ok::<_, MfaError>(store::mfa::wipe(tx, id)?)).await
}

/// A platform admin resets another person's MFA (a lost phone and no backup codes).
pub async fn admin_reset(f: Factors<'_>, target: UserId) -> Result<(), MfaError> {
    super::in_tx(f.store, move |tx| {
        store::users::get(tx, target)?;
        Ok::<_, MfaError>(store::mfa::wipe(tx, target)?)
    })
    .await?;
    f.cache.remove(&pending_key(target)).await;
    Ok(())
}

/// Checks a TOTP code at sign-in: right for now (±30 s), and not a replay of an accepted step.
pub async fn verify_totp(f: Factors<'_>, user: UserId, code: &str) -> Result<(), MfaError> {
    let code = rules::totp_code(code)?;
    let stored = f.store.call(move |c| store::mfa::totp(c, user)).await?.ok_or(MfaError::InvalidCode)?;
    let secret = f.secrets.open(&stored.secret_enc)?;
    let step = totp::matched_step(&secret, &code, f.clock.now()).ok_or(MfaError::InvalidCode)? as i64;
    if stored.last_step.is_some_and(|last| step <= last) {
        return Err(MfaError::Replayed);
    }
    let fresh = f.store.call(move |c| store::mfa::use_step(c, user, step)).await?;
    if fresh { Ok(()) } else { Err(MfaError::Replayed) }
}

/// Uses a backup code at sign-in; each works once.
pub async fn verify_backup(f: Factors<'_>, user: UserId, code: &str) -> Result<(), MfaError> {
    let hash = tokens::sha256_hex(&rules::backup_code(code)?);
    let now = f.clock.stamp();
    let (used, was_used) = f
        .store
        .call(move |c| {
            if store::mfa::use_backup_code(c, user, &hash, now)? {
                return Ok((true, false));
            }
            Ok((false, store::mfa::backup_code_spent(c, user, &hash)?))
        })
        .await?;
    match (used, was_used) {
        (true, _) => Ok(()),
        (false, true) => Err(MfaError::BackupCodeUsed),
        (false, false) => Err(MfaError::InvalidCode),
    }
}

/// Remembers this browser for 30 days; returns the cookie value (stored only as its hash).
pub async fn remember_device(
    f: Factors<'_>,
    user: UserId,
    user_agent: Option<String>,
    ip: String,
) -> Result<String, MfaError> {
    let token = tokens::random_hex(32);
    let hash = tokens::sha256_hex(&token);
    let now = f.clock.stamp();
    let expires_at = Timestamp(now.at() + chrono::Duration::days(rules::REMEMBER_DAYS));
    f.store
        .call(move |c| {
            let d = store::mfa::NewDevice { token_hash: &hash, user_agent: user_agent.as_deref(), ip: &ip, expires_at };
            store::mfa::remember_device(c, user, &d, now)
        })
        .await?;
    Ok(token)
}

/// Whether the `mfa-remember` cookie names a live remembered device of `user`.
pub async fn is_remembered(f: Factors<'_>, user: UserId, cookie: &str) -> Result<bool, MfaError> {
    let (hash, now) = (tokens::sha256_hex(cookie), f.clock.stamp());
    Ok(f.store.call(move |c| store::mfa::remembered(c, user, &hash, now)).await?)
}

pub async fn devices(f: Factors<'_>, user: UserId) -> Result<Vec<store::mfa::Device>, MfaError> {
    let now = f.clock.stamp();
    Ok(f.store.call(move |c| store::mfa::devices(c, user, now)).await?)
}

pub async fn forget_device(f: Factors<'_>, user: UserId, id: String) -> Result<(), MfaError> {
    f.store.call(move |c| store::mfa::forget_device(c, user, &id)).await.map_err(|e| match e {
        store::Error::NotFound => MfaError::DeviceNotFound,
        other => other.into(),
    })
}

/// The `mfa` object of `GET /auth/me`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub enabled: bool,
    pub enrolled_at: Option<Timestamp>,
    /// `totp`, `backup_codes`, `passkey`: the factors this account can sign in with.
    pub methods: Vec<&'static str>,
    pub backup_codes_remaining: u32,
    /// The same count under the name the first MFA brief used; kept for clients written against it.
    pub backup_codes_left: u32,
    pub passkeys: Vec<store::mfa::Passkey>,
    pub remembered_devices: usize,
    /// A team of this person requires MFA and it is not on yet.
    pub enrollment_required: bool,
    /// The factors this hub offers (passkeys only where the hub is reached over https or on localhost).
    pub available: Vec<&'static str>,
}

pub async fn status(f: Factors<'_>, user: &User, passkeys_offered: bool) -> Result<Status, MfaError> {
    let (id, now) = (user.id, f.clock.stamp());
    let (left, keys, devices, required) = f
        .store
        .call(move |c| {
            Ok((
                store::mfa::backup_codes_left(c, id)?,
                store::mfa::passkeys(c, id)?,
                store::mfa::devices(c, id, now)?.len(),
                store::mfa::required_by_a_team(c, id)?,
            ))
        })
        .await?;
    let mut methods = Vec::new();
    if user.mfa_enabled {
        methods.push("totp");
        if left > 0 {
            methods.push("backup_codes");
        }
        if !keys.is_empty() {
            methods.push("passkey");
        }
    }
    let mut available = vec!["totp", "backup_codes"];
    if passkeys_offered {
        available.push("passkey");
    }
    Ok(Status {
        enabled: user.mfa_enabled,
        enrolled_at: user.mfa_enrolled_at,
        methods,
        backup_codes_remaining: left,
        backup_codes_left: left,
        passkeys: keys,
        remembered_devices: devices,
        enrollment_required: required && !user.mfa_enabled,
        available,
    })
}

/// At start-up: proves the configured key opens what earlier runs sealed, or seals the first check
/// value. A different key is reported loudly; nothing is re-sealed under it.
pub async fn check_key(store: &Store, secrets: &SecretBox, clock: &Clock) -> Result<(), MfaError> {
    let existing = store.call(|c| store::mfa::key_check(c)).await?;
    match existing {
        Some(sealed) => {
            secrets.open(&sealed)?;
            Ok(())
        }
        None => {
            let (sealed, now) = (secrets.seal(b"birdhub-mfa-key-check"), clock.stamp());
            store.call(move |c| store::mfa::set_key_check(c, &sealed, now)).await?;
            Ok(())
        }
    }
}
