//! Writing the audit log (SPEC 6.4) from request handlers: one builder, used by every issue.
//! A failure to write is logged, never turned into an error for the user.

use serde_json::Value;

use super::context::AuthContext;
use crate::{
    ids::{TenantId, UserId},
    state::AppState,
    store::{self, audit::Entry},
};

/// An audit entry under construction: `Audit::new("user.login").actor(&ctx).ip(&ip).write(&state)`.
#[derive(Debug, Clone)]
pub struct Audit(Entry);

impl Audit {
    pub fn new(action: &str) -> Self {
        Self(Entry { action: action.to_owned(), details: Value::Null, ..Entry::default() })
    }

    pub fn actor(mut self, ctx: &AuthContext) -> Self {
        self.0.actor_user_id = ctx.user_id();
        self.0.actor_api_key_id = ctx.api_key_id().map(str::to_owned);
        self
    }

    pub fn actor_user(mut self, user: UserId) -> Self {
        self.0.actor_user_id = Some(user);
        self
    }

    pub fn tenant(mut self, tenant: impl Into<Option<TenantId>>) -> Self {
        self.0.tenant_id = tenant.into();
        self
    }

    pub fn target(mut self, kind: &str, id: impl ToString) -> Self {
        self.0.target_type = Some(kind.to_owned());
        self.0.target_id = Some(id.to_string());
        self
    }

    pub fn ip(mut self, ip: &str) -> Self {
        self.0.ip = Some(ip.to_owned());
        self
    }

    pub fn details(mut self, details: Value) -> Self {
        self.0.details = details;
        self
    }

    pub async fn write(self, state: &AppState) {
        let now = state.clock.stamp();
        let action = self.0.action.clone();
        if let Err(e) = state.store.call(move |c| store::audit::record(c, &self.0, now)).await {
            tracing::error!(action, error = %e, "could not write the audit log");
        }
    }
}
