//! Live audio (SPEC 2.8, 3 "Live audio session", 4.15): starting, keeping, stopping and timing
//! out a satellite's live session, and telling the satellite over MQTT.
//!
//! Sessions live in [`LiveSessions`] (one per satellite, shared by all its watchers). Creating
//! one sends the satellite `live-start {sessionId}` (QoS 1); while it runs, the hub repeats
//! `live-start` every [`LIVE_REFRESH_SECS`] so a satellite that restarted resumes. It ends with
//! `live-stop {sessionId}` (QoS 1) when the last watcher leaves, when it is stopped over HTTP,
//! when its satellite is deleted, or when no watcher started or kept it alive for
//! `live_audio.timeout_ms` (`LIVE_AUDIO_TIMEOUT_MS`, default 60 s) of hub-clock time.
//! Authorisation is the caller's (the WebSocket checks Member+ of the team; the HTTP routes the
//! device rule).

use crate::{
    clock::Clock,
    ids::{SatelliteId, TenantId, UserId},
    mqtt::{
        MqttHandle,
        live::{EndReason, Joined, Left, LiveSessions, SessionRef, Status, Watcher},
        protocol::{LIVE_REFRESH_SECS, LiveControl},
        topics::{self, Channel},
    },
    store::{self, Store},
};

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("satellite not found")]
    SatelliteNotFound,
    #[error("this connection is not watching that satellite")]
    NotWatching,
    #[error("the satellite has no live session")]
    NoSession,
    #[error("could not reach the satellite: {0}")]
    Publish(String),
    #[error(transparent)]
    Store(store::Error),
}

impl From<store::Error> for LiveError {
    fn from(e: store::Error) -> Self {
        match e {
            store::Error::NotFound => Self::SatelliteNotFound,
            e => Self::Store(e),
        }
    }
}

/// The handles live sessions need.
#[derive(Clone, Copy)]
pub struct LiveContext<'a> {
    pub live: &'a LiveSessions,
    pub store: &'a Store,
    pub mqtt: &'a MqttHandle,
    pub clock: &'a Clock,
    pub topic_root: &'a str,
    /// How long a session lives without a start or keepalive (`live_audio.timeout_ms`,
    /// default [`crate::mqtt::live::LIVE_AUDIO_TIMEOUT_MS`]).
    pub timeout_ms: i64,
}

impl LiveContext<'_> {
    /// Sends `live-start` or `live-stop` `{sessionId}` (QoS 1) to the session's satellite.
    async fn tell(&self, session: &SessionRef, channel: Channel) -> Result<(), String> {
        let body = serde_json::to_vec(&LiveControl { session_id: Some(session.session_id.clone()) })
            .map_err(|e| e.to_string())?;
        let topic = topics::topic(self.topic_root, session.tenant, session.satellite, channel);
        self.mqtt.publish(topic, body, 1).await
    }

    /// Sends `live-stop` for sessions that ended; a failure is only logged (the satellite stops
    /// by itself once `live-start` refreshes stop coming).
    async fn stop_all(&self, ended: &[SessionRef]) {
        for session in ended {
            if let Err(e) = self.tell(session, Channel::LiveStop).await {
                tracing::warn!(satellite = %session.satellite, error = %e, "live-stop not sent");
            }
        }
    }
}

/// `watcher` starts watching `satellite` of `tenant`: joins its session, or creates one and
/// sends the satellite `live-start`. Another team's or an unknown satellite is
/// [`LiveError::SatelliteNotFound`]. `listener` is the person watching (none for an API key):
/// their losing the role ends their watching at once ([`evict`]).
pub async fn start(
    ctx: LiveContext<'_>,
    tenant: TenantId,
    satellite: SatelliteId,
    watcher: &Watcher,
    listener: Option<UserId>,
) -> Result<Joined, LiveError> {
    let sat = ctx.store.call(move |c| store::satellites::get(c, satellite)).await?;
    if sat.tenant_id != tenant {
        return Err(LiveError::SatelliteNotFound);
    }
    let joined = ctx.live.join(tenant, satellite, watcher, listener, ctx.clock.stamp());
    if joined.created
        && let Err(e) = ctx.tell(&joined.session, Channel::LiveStart).await
    {
        ctx.live.abandon(&joined.session);
        return Err(LiveError::Publish(e));
    }
    Ok(joined)
}

/// Refreshes the session's keepalive time (only a watcher of it may).
pub fn keepalive(ctx: LiveContext<'_>, satellite: SatelliteId, watcher: &Watcher) -> Result<(), LiveError> {
    if ctx.live.keepalive(satellite, watcher.id(), ctx.clock.stamp()) { Ok(()) } else { Err(LiveError::NotWatching) }
}

/// `watcher` stops watching `satellite`; with the last watcher the session ends (`live-stop`).
pub async fn stop_watching(ctx: LiveContext<'_>, satellite: SatelliteId, watcher: &Watcher) -> Result<Left, LiveError> {
    let left = ctx.live.leave(satellite, watcher.id());
    match &left {
        Left::NotWatching => return Err(LiveError::NotWatching),
        Left::Ended(session) => ctx.stop_all(std::slice::from_ref(session)).await,
        Left::Stayed { .. } => {}
    }
    Ok(left)
}

/// A closing connection leaves every session it watched.
pub async fn leave_all(ctx: LiveContext<'_>, watcher: &Watcher) {
    let ended = ctx.live.leave_all(watcher.id());
    ctx.stop_all(&ended).await;
}

/// Ends `satellite`'s session for everyone (`DELETE /satellites/{id}/live`, or the satellite
/// was deleted): `live-stop` to the satellite, `live-ended` with `reason` to the watchers.
pub async fn end(
    ctx: LiveContext<'_>,
    tenant: TenantId,
    satellite: SatelliteId,
    reason: EndReason,
) -> Result<SessionRef, LiveError> {
    let ended = ctx.live.end(tenant, satellite, reason).ok_or(LiveError::NoSession)?;
    ctx.stop_all(std::slice::from_ref(&ended)).await;
    Ok(ended)
}

/// `user` is no longer a member (or more) of the teams for which `still_member` is false: their
/// watchers there get `live-ended` (`access_revoked`) and no more audio; a session left without
/// watchers ends with `live-stop` to its satellite. Returns how many sessions ended.
pub async fn evict(ctx: LiveContext<'_>, user: UserId, still_member: impl Fn(TenantId) -> bool) -> usize {
    let ended = ctx.live.evict(user, still_member);
    ctx.stop_all(&ended).await;
    ended.len()
}

/// `satellite`'s session as its team sees it, if one runs.
pub fn status(live: &LiveSessions, tenant: TenantId, satellite: SatelliteId) -> Option<Status> {
    live.status(tenant, satellite)
}

/// One pass of the sweeper: ends the sessions that timed out (hub clock), then repeats
/// `live-start` for those due a refresh.
pub async fn sweep(ctx: LiveContext<'_>) {
    let now = ctx.clock.stamp();
    let expired = ctx.live.expire(now, ctx.timeout_ms);
    for session in &expired {
        tracing::info!(satellite = %session.satellite, session = %session.session_id, "live session timed out");
    }
    ctx.stop_all(&expired).await;
    for session in ctx.live.due_refresh(now, LIVE_REFRESH_SECS as i64 * 1000) {
        if let Err(e) = ctx.tell(&session, Channel::LiveStart).await {
            tracing::warn!(satellite = %session.satellite, error = %e, "live-start refresh not sent");
        }
    }
}

/// Ends the session of a satellite that no longer exists (reason `satellite_deleted`); a
/// satellite that still exists (its credentials were only rotated) keeps its session.
pub async fn end_if_deleted(ctx: LiveContext<'_>, tenant: TenantId, satellite: SatelliteId) {
    if ctx.live.status(tenant, satellite).is_none() {
        return;
    }
    match ctx.store.call(move |c| store::satellites::get(c, satellite)).await {
        Err(store::Error::NotFound) => {
            let _ = end(ctx, tenant, satellite, EndReason::SatelliteDeleted).await;
        }
        Ok(sat) if sat.tenant_id != tenant => {
            let _ = end(ctx, tenant, satellite, EndReason::SatelliteDeleted).await;
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(%satellite, error = %e, "could not check a revoked satellite's live session"),
    }
}
