//! The live-audio manager (SPEC 2.8, 3 "Live audio session", 4.15): one session per satellite,
//! shared by every WebSocket that watches it, held in memory only.
//!
//! A watcher is one WebSocket ([`Watcher`]): it joins a satellite's session (creating it when
//! none runs), refreshes the session's keepalive time with each start or keepalive, and leaves
//! with `live-stop` or by closing. The registry hands each watcher ready-to-send frames on its
//! own bounded queue: the satellite's `live-audio` chunks (only those carrying the session's id)
//! and `live-ended` when the session ends for another reason than the watcher's own leaving.
//!
//! The registry does no I/O: the callers (`usecases::satellite_live`) publish `live-start` and
//! `live-stop` for the sessions it reports as created, ended or due for a refresh.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
    },
};

use serde::Serialize;
use serde_json::json;
use tokio::sync::mpsc;

use super::protocol::LiveAudio;
use crate::{
    ids::{SatelliteId, TenantId, UserId},
    time::Timestamp,
};

/// A session ends when no watcher has started or kept it alive for this long (SPEC 8); the
/// default of `live_audio.timeout_ms`.
pub const LIVE_AUDIO_TIMEOUT_MS: i64 = 60_000;
/// The largest `live-audio` message relayed; bigger ones are dropped (and logged by ingest).
pub const MAX_LIVE_AUDIO_BYTES: usize = 2 << 20;
/// Frames queued for one watcher before its newest chunks are dropped (32 chunks: ~96 s).
const WATCHER_QUEUE: usize = 32;

/// One frame for a watching socket, ready to send as WebSocket text.
pub type Frame = Arc<str>;

/// One watching socket: its id and the sending end of its frame queue.
#[derive(Debug, Clone)]
pub struct Watcher {
    id: u64,
    tx: mpsc::Sender<Frame>,
}

impl Watcher {
    /// This watcher's id, unique in the registry.
    pub fn id(&self) -> u64 {
        self.id
    }
}

/// Why a session ended, as watchers read it in `live-ended`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// No start or keepalive from any watcher for [`LIVE_AUDIO_TIMEOUT_MS`].
    Timeout,
    /// Ended over HTTP (`DELETE /satellites/{id}/live`).
    Stopped,
    /// The satellite was deleted.
    SatelliteDeleted,
    /// This watcher's person lost the member role in the team (removed, demoted, blocked or
    /// deleted); sent to that watcher only, the others keep watching.
    AccessRevoked,
}

/// A session the hub must tell its satellite about (`live-start` or `live-stop`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRef {
    pub tenant: TenantId,
    pub satellite: SatelliteId,
    pub session_id: String,
}

/// What joining found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    pub session: SessionRef,
    /// Watchers after joining, this one included.
    pub watchers: usize,
    /// The session was created by this join (the satellite must be sent `live-start`).
    pub created: bool,
}

/// What leaving did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Left {
    /// The socket was not watching that satellite.
    NotWatching,
    /// Others still watch; the session goes on.
    Stayed { session_id: String, watchers: usize },
    /// The last watcher left; the session is over (the satellite must be sent `live-stop`).
    Ended(SessionRef),
}

/// What became of one `live-audio` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relay {
    /// Queued for this many watchers.
    Relayed(usize),
    /// The satellite has no session.
    NoSession,
    /// The message names another session than the satellite's current one.
    WrongSession,
}

/// A session as `GET /satellites/{id}/live` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub session_id: String,
    pub watchers: usize,
    pub started_at: Timestamp,
    pub last_keepalive_at: Timestamp,
    pub chunks_relayed: u64,
    pub chunks_dropped: u64,
}

/// A watching socket as a session holds it: its queue, and the person behind it (none for an API
/// key), so that person's losing the role can end their watching at once.
struct Listener {
    tx: mpsc::Sender<Frame>,
    user: Option<UserId>,
}

fn ended_frame(session: &str, satellite: SatelliteId, reason: EndReason) -> Frame {
    json!({
        "type": "live-ended",
        "data": { "sessionId": session, "satelliteId": satellite, "reason": reason },
    })
    .to_string()
    .into()
}

struct Session {
    id: String,
    tenant: TenantId,
    started_at: Timestamp,
    last_keepalive: Timestamp,
    last_refresh: Timestamp,
    watchers: HashMap<u64, Listener>,
    chunks_relayed: u64,
    chunks_dropped: u64,
}

impl Session {
    fn as_ref(&self, satellite: SatelliteId) -> SessionRef {
        SessionRef { tenant: self.tenant, satellite, session_id: self.id.clone() }
    }

    /// Tells every watcher the session ended.
    fn announce_end(&self, satellite: SatelliteId, reason: EndReason) {
        let frame = ended_frame(&self.id, satellite, reason);
        for listener in self.watchers.values() {
            if listener.tx.try_send(frame.clone()).is_err() {
                tracing::debug!(%satellite, "a watcher missed live-ended (queue full or closed)");
            }
        }
    }
}

/// The live sessions of this process; cloneable, shared by the WebSocket, HTTP and MQTT ingest.
#[derive(Clone, Default)]
pub struct LiveSessions {
    sessions: Arc<Mutex<HashMap<SatelliteId, Session>>>,
    next_watcher: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
}

impl LiveSessions {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SatelliteId, Session>> {
        // Nothing panics while holding the lock; should it, the map is still consistent.
        self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new watcher and the receiving end of its frame queue.
    pub fn watcher(&self) -> (Watcher, mpsc::Receiver<Frame>) {
        let (tx, rx) = mpsc::channel(WATCHER_QUEUE);
        (Watcher { id: self.next_watcher.fetch_add(1, Ordering::Relaxed), tx }, rx)
    }

    /// Joins `satellite`'s session, creating it when none runs, and counts as a keepalive. `user`
    /// is the person watching (none for an API key), for [`LiveSessions::evict`].
    pub fn join(
        &self,
        tenant: TenantId,
        satellite: SatelliteId,
        watcher: &Watcher,
        user: Option<UserId>,
        now: Timestamp,
    ) -> Joined {
        let mut sessions = self.lock();
        // A session of another team (the satellite changed hands) is not joined but replaced.
        if sessions.get(&satellite).is_some_and(|s| s.tenant != tenant)
            && let Some(old) = sessions.remove(&satellite)
        {
            old.announce_end(satellite, EndReason::Stopped);
        }
        let mut created = false;
        let session = sessions.entry(satellite).or_insert_with(|| {
            created = true;
            Session {
                id: uuid::Uuid::new_v4().to_string(),
                tenant,
                started_at: now,
                last_keepalive: now,
                last_refresh: now,
                watchers: HashMap::new(),
                chunks_relayed: 0,
                chunks_dropped: 0,
            }
        });
        session.watchers.insert(watcher.id, Listener { tx: watcher.tx.clone(), user });
        session.last_keepalive = now;
        Joined { session: session.as_ref(satellite), watchers: session.watchers.len(), created }
    }

    /// Refreshes the keepalive time; `false` when `watcher` does not watch `satellite`.
    pub fn keepalive(&self, satellite: SatelliteId, watcher: u64, now: Timestamp) -> bool {
        match self.lock().get_mut(&satellite) {
            Some(s) if s.watchers.contains_key(&watcher) => {
                s.last_keepalive = now;
                true
            }
            _ => false,
        }
    }

    /// `watcher` stops watching `satellite`; the session ends with its last watcher.
    pub fn leave(&self, satellite: SatelliteId, watcher: u64) -> Left {
        let mut sessions = self.lock();
        let Some(session) = sessions.get_mut(&satellite) else { return Left::NotWatching };
        if session.watchers.remove(&watcher).is_none() {
            return Left::NotWatching;
        }
        if !session.watchers.is_empty() {
            return Left::Stayed { session_id: session.id.clone(), watchers: session.watchers.len() };
        }
        match sessions.remove(&satellite) {
            Some(ended) => Left::Ended(ended.as_ref(satellite)),
            None => Left::NotWatching,
        }
    }

    /// `watcher` (a closing socket) leaves every session; returns the sessions that ended.
    pub fn leave_all(&self, watcher: u64) -> Vec<SessionRef> {
        let mut sessions = self.lock();
        let mut ended = Vec::new();
        sessions.retain(|satellite, s| {
            if s.watchers.remove(&watcher).is_some() && s.watchers.is_empty() {
                ended.push(s.as_ref(*satellite));
                return false;
            }
            true
        });
        ended
    }

    /// Ends `satellite`'s session of `tenant` and tells its watchers why.
    pub fn end(&self, tenant: TenantId, satellite: SatelliteId, reason: EndReason) -> Option<SessionRef> {
        let mut sessions = self.lock();
        if sessions.get(&satellite)?.tenant != tenant {
            return None;
        }
        let session = sessions.remove(&satellite)?;
        session.announce_end(satellite, reason);
        Some(session.as_ref(satellite))
    }

    /// `user` lost the member role in every team for which `still_member` is false: their
    /// watchers there leave at once and each gets `live-ended` (reason `access_revoked`). Returns
    /// the sessions that ended because no watcher is left (the satellite must be sent `live-stop`).
    pub fn evict(&self, user: UserId, still_member: impl Fn(TenantId) -> bool) -> Vec<SessionRef> {
        let mut sessions = self.lock();
        let mut ended = Vec::new();
        sessions.retain(|satellite, s| {
            if still_member(s.tenant) {
                return true;
            }
            let frame = ended_frame(&s.id, *satellite, EndReason::AccessRevoked);
            s.watchers.retain(|_, listener| {
                if listener.user != Some(user) {
                    return true;
                }
                if listener.tx.try_send(frame.clone()).is_err() {
                    tracing::debug!(%satellite, "an evicted watcher missed live-ended (queue full or closed)");
                }
                false
            });
            if s.watchers.is_empty() {
                ended.push(s.as_ref(*satellite));
                return false;
            }
            true
        });
        ended
    }

    /// Forgets a session just created whose `live-start` could not be sent (no frames).
    pub fn abandon(&self, session: &SessionRef) {
        let mut sessions = self.lock();
        if sessions.get(&session.satellite).is_some_and(|s| s.id == session.session_id) {
            sessions.remove(&session.satellite);
        }
    }

    /// Ends the sessions whose last start or keepalive is more than `timeout_ms` before `now`
    /// (their watchers get `live-ended`, reason `timeout`).
    pub fn expire(&self, now: Timestamp, timeout_ms: i64) -> Vec<SessionRef> {
        let mut sessions = self.lock();
        let mut ended = Vec::new();
        sessions.retain(|satellite, s| {
            if s.last_keepalive.millis_until(now) > timeout_ms {
                s.announce_end(*satellite, EndReason::Timeout);
                ended.push(s.as_ref(*satellite));
                return false;
            }
            true
        });
        ended
    }

    /// The sessions whose `live-start` was last sent at least `every_ms` before `now`; each is
    /// marked as sent now.
    pub fn due_refresh(&self, now: Timestamp, every_ms: i64) -> Vec<SessionRef> {
        let mut sessions = self.lock();
        let mut due = Vec::new();
        for (satellite, s) in sessions.iter_mut() {
            if s.last_refresh.millis_until(now) >= every_ms {
                s.last_refresh = now;
                due.push(s.as_ref(*satellite));
            }
        }
        due
    }

    /// Queues a satellite's `live-audio` for the watchers of its session. Chunks of another
    /// session are dropped and counted; a watcher whose queue is full misses the chunk.
    pub fn relay(&self, tenant: TenantId, satellite: SatelliteId, msg: &LiveAudio) -> Relay {
        let mut sessions = self.lock();
        let session = match sessions.get_mut(&satellite) {
            Some(s) if s.tenant == tenant => s,
            _ => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return Relay::NoSession;
            }
        };
        if msg.session_id != session.id {
            session.chunks_dropped += 1;
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return Relay::WrongSession;
        }
        let frame: Frame = json!({
            "type": "live-audio",
            "data": {
                "sessionId": msg.session_id,
                "satelliteId": satellite,
                "seq": msg.seq,
                "recordedAt": msg.recorded_at,
                "audio": msg.audio,
            },
        })
        .to_string()
        .into();
        let mut queued = 0;
        for listener in session.watchers.values() {
            match listener.tx.try_send(frame.clone()) {
                Ok(()) => queued += 1,
                Err(_) => tracing::debug!(%satellite, seq = msg.seq, "a slow watcher missed a live chunk"),
            }
        }
        session.chunks_relayed += 1;
        Relay::Relayed(queued)
    }

    /// `satellite`'s session as its team sees it.
    pub fn status(&self, tenant: TenantId, satellite: SatelliteId) -> Option<Status> {
        let sessions = self.lock();
        let s = sessions.get(&satellite).filter(|s| s.tenant == tenant)?;
        Some(Status {
            session_id: s.id.clone(),
            watchers: s.watchers.len(),
            started_at: s.started_at,
            last_keepalive_at: s.last_keepalive,
            chunks_relayed: s.chunks_relayed,
            chunks_dropped: s.chunks_dropped,
        })
    }

    /// `live-audio` messages dropped since start (no session, or another session's id).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp(chrono::DateTime::UNIX_EPOCH + chrono::Duration::milliseconds(ms))
    }

    fn chunk(session: &str, seq: u64) -> LiveAudio {
        LiveAudio {
            session_id: session.into(),
            satellite_id: String::new(),
            tenant_id: String::new(),
            seq,
            recorded_at: "2026-05-15T06:30:00Z".into(),
            audio: "UklGRg==".into(),
        }
    }

    #[test]
    fn watchers_share_one_session_that_ends_with_the_last() {
        let live = LiveSessions::new();
        let (t, s) = (TenantId::new(), SatelliteId::new());
        let ((a, mut ra), (b, mut rb)) = (live.watcher(), live.watcher());
        let first = live.join(t, s, &a, None, at(0));
        let second = live.join(t, s, &b, None, at(5));
        assert!(first.created && !second.created);
        assert_eq!((second.session.session_id.clone(), second.watchers), (first.session.session_id.clone(), 2));
        assert_eq!(live.relay(t, s, &chunk(&first.session.session_id, 1)), Relay::Relayed(2));
        assert_eq!(live.relay(t, s, &chunk("other", 2)), Relay::WrongSession);
        assert_eq!(live.relay(TenantId::new(), s, &chunk(&first.session.session_id, 3)), Relay::NoSession);
        assert!(ra.try_recv().is_ok() && rb.try_recv().is_ok());
        assert!(ra.try_recv().is_err(), "nothing else was relayed");
        let status = live.status(t, s).expect("active");
        assert_eq!((status.chunks_relayed, status.chunks_dropped, status.watchers), (1, 1, 2));
        assert!(matches!(live.leave(s, a.id()), Left::Stayed { watchers: 1, .. }));
        assert_eq!(live.leave(s, a.id()), Left::NotWatching);
        assert_eq!(live.leave_all(b.id()), vec![first.session]);
        assert!(live.status(t, s).is_none());
    }

    #[test]
    fn evicting_a_person_ends_only_their_watching() {
        let live = LiveSessions::new();
        let (t, other_team, s) = (TenantId::new(), TenantId::new(), SatelliteId::new());
        let (alice, bob) = (UserId::new(), UserId::new());
        let ((a, mut ra), (b, mut rb)) = (live.watcher(), live.watcher());
        let joined = live.join(t, s, &a, Some(alice), at(0));
        live.join(t, s, &b, Some(bob), at(0));
        assert!(live.evict(alice, |team| team == t).is_empty(), "alice is still a member of this team");
        assert!(ra.try_recv().is_err());
        assert!(live.evict(alice, |team| team == other_team).is_empty(), "bob still watches");
        let frame: serde_json::Value = serde_json::from_str(&ra.try_recv().expect("live-ended")).expect("json");
        assert_eq!(frame["data"]["reason"], "access_revoked");
        assert_eq!(live.relay(t, s, &chunk(&joined.session.session_id, 1)), Relay::Relayed(1));
        assert!(ra.try_recv().is_err(), "alice gets no more audio");
        assert!(rb.try_recv().is_ok(), "bob still does");
        assert_eq!(live.evict(bob, |_| false), vec![joined.session], "the last watcher gone ends the session");
        assert!(live.status(t, s).is_none());
    }

    #[test]
    fn sessions_time_out_without_keepalives_and_refresh_on_schedule() {
        let live = LiveSessions::new();
        let (t, s) = (TenantId::new(), SatelliteId::new());
        let (w, mut rx) = live.watcher();
        live.join(t, s, &w, None, at(0));
        assert!(live.due_refresh(at(19_999), 20_000).is_empty());
        assert_eq!(live.due_refresh(at(20_000), 20_000).len(), 1);
        assert!(live.due_refresh(at(30_000), 20_000).is_empty(), "refreshed at 20 s");
        assert!(live.keepalive(s, w.id(), at(40_000)));
        assert!(!live.keepalive(s, w.id() + 1, at(40_000)), "not a watcher");
        assert!(live.expire(at(100_000), LIVE_AUDIO_TIMEOUT_MS).is_empty());
        assert_eq!(live.expire(at(100_001), LIVE_AUDIO_TIMEOUT_MS).len(), 1);
        let frame: serde_json::Value = serde_json::from_str(&rx.try_recv().expect("live-ended")).expect("json");
        assert_eq!((frame["type"].as_str(), frame["data"]["reason"].as_str()), (Some("live-ended"), Some("timeout")));
        assert_eq!(live.end(t, s, EndReason::Stopped), None, "already over");
    }
}
