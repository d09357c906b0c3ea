//! What a team admin hands out: team API keys (for scripts and integrations) and invite links.
//! Both are stored as SHA-256 of the secret, which is returned once. Both live only while their
//! maker may still make them (see `access_changes`): removing, demoting or blocking the maker, or
//! deleting their account, revokes them.

use crate::{
    auth::{limits, tokens},
    clock::Clock,
    domain::Role,
    ids::{TenantId, UserId},
    store::{self, Store, api_keys::ApiKey, invites::Invite},
};

#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("no such API key in this team")]
    KeyNotFound,
    #[error("no such pending invite in this team")]
    InviteNotFound,
    #[error(transparent)]
    Store(store::Error),
}

impl From<store::Error> for CredentialError {
    fn from(e: store::Error) -> Self {
        Self::Store(e)
    }
}

/// Mints a team key with `role` in `tenant`, made by `by` (an admin of the team, checked by the
/// caller); returns the stored key and the raw key, shown once.
pub async fn create_api_key(
    store: &Store,
    tenant: TenantId,
    by: UserId,
    name: String,
    role: Role,
) -> Result<(ApiKey, String), CredentialError> {
    let raw = tokens::random_hex(32);
    let (hash, prefix) = (tokens::sha256_hex(&raw), raw[..8].to_owned());
    let key = super::in_tx(store, move |tx| {
        let new = store::api_keys::NewKey {
            tenant_id: tenant,
            satellite_id: None,
            created_by: Some(by),
            name: &name,
            key_hash: &hash,
            key_prefix: &prefix,
            role,
        };
        let id = store::api_keys::create(tx, &new)?;
        store::api_keys::list(tx, tenant)?.into_iter().find(|k| k.id == id).ok_or(CredentialError::KeyNotFound)
    })
    .await?;
    Ok((key, raw))
}

/// Revokes key `id` of `tenant` at once (open WebSockets on it close at their next check).
pub async fn revoke_api_key(store: &Store, clock: &Clock, tenant: TenantId, id: String) -> Result<(), CredentialError> {
    let now = clock.stamp();
    store.call(move |c| store::api_keys::revoke(c, tenant, &id, now)).await.map_err(|e| match e {
        store::Error::NotFound => CredentialError::KeyNotFound,
        other => other.into(),
    })
}

/// An invite into `tenant` with `role` (for `email` only, when given), made by `by`; valid for
/// 7 days. Returns the invite and the raw token, shown once.
pub async fn create_invite(
    store: &Store,
    clock: &Clock,
    tenant: TenantId,
    by: UserId,
    role: Role,
    email: Option<String>,
) -> Result<(Invite, String), CredentialError> {
    let token = tokens::random_hex(24);
    let (hash, expires) = (tokens::sha256_hex(&token), clock.stamp_in(limits::invite_ttl()));
    let invite = store
        .call(move |c| {
            let new = store::invites::NewInvite {
                tenant_id: tenant,
                role,
                email: email.as_deref(),
                created_by: by,
                token_hash: &hash,
                expires_at: expires,
            };
            store::invites::create(c, &new)
        })
        .await?;
    Ok((invite, token))
}

/// Revokes pending invite `id` of `tenant`.
pub async fn revoke_invite(store: &Store, clock: &Clock, tenant: TenantId, id: String) -> Result<(), CredentialError> {
    let now = clock.stamp();
    store.call(move |c| store::invites::revoke(c, tenant, &id, now)).await.map_err(|e| match e {
        store::Error::NotFound => CredentialError::InviteNotFound,
        other => other.into(),
    })
}
