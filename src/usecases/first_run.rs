//! The first account of a brand-new hub, created from the dashboard with the one-time setup code
//! the hub printed to its log at start-up. It becomes a platform admin with its own team.

use crate::{
    auth::password,
    domain::{settings::PlatformSettings, validate},
    ids::{TenantId, UserId},
    store::{self, Store},
    time::Timestamp,
};

#[derive(Debug, thiserror::Error)]
pub enum FirstRunError {
    #[error("this hub already has an account; sign in instead")]
    AlreadySetUp,
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("could not hash the password: {0}")]
    Hash(String),
}

pub struct FirstAccount {
    pub email: String,
    pub name: String,
    pub password: String,
    /// Whether the people this owner invites may make teams of their own (the hub's
    /// `allow_tenant_creation`, off unless the owner ticks it).
    pub allow_tenant_creation: bool,
}

pub struct Created {
    pub user_id: UserId,
    pub tenant_id: TenantId,
    pub email: String,
}

/// Whether the hub has no account yet.
pub async fn needs_setup(store: &Store) -> Result<bool, store::Error> {
    Ok(store.call(|c| store::users::count(c)).await? == 0)
}

/// Creates the first account (platform admin) and its team, "<name>'s team". Refused once any
/// account exists, also when two browsers race: the check and the insert share one transaction.
pub async fn create_first_account(
    store: &Store,
    passwords: &password::Passwords,
    new: FirstAccount,
) -> Result<Created, FirstRunError> {
    let email = validate::email(&new.email).map_err(|e| FirstRunError::Invalid(e.to_string()))?;
    let name = validate::name(&new.name, "the name").map_err(|e| FirstRunError::Invalid(e.to_string()))?;
    password::check_strength(&new.password).map_err(|e| FirstRunError::Invalid(e.to_string()))?;
    let hash = passwords.hash(new.password).await.map_err(|e| FirstRunError::Hash(e.to_string()))?;
    let user = store::users::NewUser {
        email: email.clone(),
        name: name.clone(),
        password_hash: hash,
        is_platform_admin: true,
    };
    let team = format!("{name}'s team");
    let allow_teams = new.allow_tenant_creation;
    super::in_tx(store, move |tx| {
        if store::users::count(tx)? > 0 {
            return Err(FirstRunError::AlreadySetUp);
        }
        let user_id = store::users::create(tx, &user)?;
        let tenant_id = store::tenants::create(tx, &team, user_id)?;
        // The owner's choice is stored with the account, so the hub never runs with a default the
        // owner did not see.
        let mut platform: PlatformSettings = store::settings::load(tx, store::settings::PLATFORM)?;
        platform.allow_tenant_creation = allow_teams;
        store::settings::save_in(tx, store::settings::PLATFORM, &platform, Timestamp(chrono::Utc::now()))?;
        Ok(Created { user_id, tenant_id, email })
    })
    .await
}
