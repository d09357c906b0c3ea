//! The device rule (SPEC 5.4), for every mutating satellite route. Authorised against the device's
//! own team, not the caller's active team. A caller may act if they are a platform admin, an admin
//! of the device's team, or the member who registered it while the team's `device_policy` is
//! `members`. A device's own satellite-scoped key may rename it, rotate its key and push its config,
//! and nothing else (`super::satellite_key` is the list; the guards refuse the key on every other
//! call before this rule is asked). A device without a registrant is team-owned and admin-managed. Unknown or
//! invisible devices answer 404; visible but unmanageable ones 403.

use super::{AuthContext, AuthError, Principal};
use crate::{
    domain::{
        Role,
        settings::{DevicePolicy, TenantSettings},
    },
    ids::{SatelliteId, UserId},
    state::AppState,
    store::{self, satellites::Satellite},
};

/// What the caller wants to do to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceAction {
    /// Read it (any member of its team).
    View,
    /// Rename, rotate its key, push its config: also the device's own key.
    SelfService,
    /// Everything else (delete, lock config, profile).
    Manage,
}

/// How the caller relates to the device's team.
#[derive(Debug, Clone, Copy)]
pub struct Relation {
    pub sees_all: bool,
    pub role: Option<Role>,
    pub user: Option<UserId>,
    /// The request carries this very device's satellite-scoped key.
    pub own_key: bool,
}

/// The rule itself, with no I/O.
pub fn may(rel: Relation, registered_by: Option<UserId>, policy: DevicePolicy, action: DeviceAction) -> bool {
    if rel.sees_all {
        return true;
    }
    if rel.own_key {
        return matches!(action, DeviceAction::View | DeviceAction::SelfService);
    }
    match (action, rel.role) {
        (_, None) => false,
        (DeviceAction::View, Some(_)) => true,
        (_, Some(Role::Admin)) => true,
        (_, Some(Role::Member)) => rel.user.is_some() && registered_by == rel.user && policy == DevicePolicy::Members,
        (_, Some(Role::Viewer)) => false,
    }
}

/// Loads the device and checks the rule: 404 when invisible, 403 when visible but not allowed.
pub async fn check(
    state: &AppState,
    ctx: &AuthContext,
    id: SatelliteId,
    action: DeviceAction,
) -> Result<(Satellite, Relation, TenantSettings), AuthError> {
    let user = ctx.user_id();
    let found = state
        .store
        .call(move |c| {
            let Some(sat) = store::satellites::get(c, id).ok() else { return Ok(None) };
            let role = match user {
                Some(u) => store::tenants::role_of(c, sat.tenant_id, u)?,
                None => None,
            };
            let settings: TenantSettings = store::settings::load(c, &sat.tenant_id.to_string())?;
            Ok(Some((sat, role, settings)))
        })
        .await?;
    let (sat, user_role, settings) = found.ok_or(AuthError::SatelliteNotFound)?;
    let rel = relation(ctx, &sat, user_role);
    if !rel.sees_all && rel.role.is_none() && !rel.own_key {
        return Err(AuthError::SatelliteNotFound);
    }
    if !may(rel, sat.registered_by, settings.device_policy, action) {
        return Err(AuthError::DeviceNotManageable);
    }
    Ok((sat, rel, settings))
}

/// The caller's relation to a device, given their membership role in its team (for users).
pub fn relation(ctx: &AuthContext, sat: &Satellite, user_role: Option<Role>) -> Relation {
    let (role, own_key) = match &ctx.principal {
        Principal::Satellite { tenant_id, satellite_id, .. } => {
            (None, *tenant_id == sat.tenant_id && *satellite_id == sat.id)
        }
        Principal::ApiKey { tenant_id, role, .. } => ((*tenant_id == sat.tenant_id).then_some(*role), false),
        _ => (user_role, false),
    };
    Relation { sees_all: ctx.sees_all(), role, user: ctx.user_id(), own_key }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(role: Option<Role>, user: Option<UserId>) -> Relation {
        Relation { sees_all: false, role, user, own_key: false }
    }

    #[test]
    fn the_rule_matches_the_spec() {
        let (me, other) = (UserId::new(), UserId::new());
        let (m, a) = (DevicePolicy::Members, DevicePolicy::Admins);
        use DeviceAction::*;
        assert!(may(Relation { sees_all: true, role: None, user: None, own_key: false }, Some(other), a, Manage));
        assert!(may(rel(Some(Role::Admin), Some(me)), Some(other), a, Manage));
        assert!(may(rel(Some(Role::Member), Some(me)), Some(me), m, Manage), "registrant under members policy");
        assert!(!may(rel(Some(Role::Member), Some(me)), Some(me), a, Manage), "not under admins policy");
        assert!(!may(rel(Some(Role::Member), Some(me)), Some(other), m, Manage), "someone else's device");
        assert!(!may(rel(Some(Role::Member), Some(me)), None, m, Manage), "team-owned devices are admin-managed");
        assert!(!may(rel(Some(Role::Viewer), Some(me)), Some(me), m, SelfService));
        assert!(may(rel(Some(Role::Viewer), Some(me)), Some(other), m, View));
        let key = Relation { sees_all: false, role: None, user: None, own_key: true };
        assert!(may(key, None, a, SelfService) && !may(key, None, a, Manage));
        assert!(!may(rel(None, Some(me)), Some(me), m, View));
    }
}
