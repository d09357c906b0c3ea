//! Sign-in sessions as rows: one is started for each sign-in and ended at sign-out, so a session
//! can end before its token expires. (The password and second-factor checks that come before a
//! session are the login routes'.)

use crate::{
    clock::Clock,
    ids::UserId,
    store::{self, Store},
    time::Timestamp,
};

/// A new session row for `user` from `ip`, valid until `expires_at`; returns its id.
pub async fn start_session(
    store: &Store,
    user: UserId,
    ip: String,
    user_agent: Option<String>,
    expires_at: Timestamp,
) -> Result<String, store::Error> {
    store.call(move |c| store::sessions::create(c, user, &ip, user_agent.as_deref(), expires_at)).await
}

/// Ends session `id` (sign-out).
pub async fn end_session(store: &Store, clock: &Clock, id: String) -> Result<(), store::Error> {
    let now = clock.stamp();
    store.call(move |c| store::sessions::revoke(c, &id, now)).await
}
