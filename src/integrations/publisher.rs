//! The integrations task: follows the event bus and the database, and keeps Home Assistant's
//! discovery configs, the retained states and the feed up to date on the embedded broker (and
//! the bridge, when one is configured). A retained message is sent only when it changed.

use std::{
    collections::{BTreeMap, HashSet},
    time::Duration,
};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{
    bridge::{self, Bridge},
    discovery,
    feed::{DetectionMessage, HubState, LastDetectionAttributes, OFFLINE, ONLINE, SatelliteState, Topics},
};
use crate::{
    events::{DetectionCreated, Event},
    ids::SatelliteId,
    state::AppState,
    store::home_feed::SatelliteFacts,
    usecases::home_feed::{self, Choice, FeedError, Snapshot, Team},
};

/// How often the states are read again without any event (telemetry, the day rolling over).
const REFRESH_EVERY: Duration = Duration::from_secs(60);
/// Events close together cause one read of the database, this long after the first.
const COALESCE: Duration = Duration::from_millis(300);
/// How often a hub without its team looks again.
const TEAM_RETRY: Duration = Duration::from_secs(5);

/// What the integrations task starts with.
#[derive(Debug)]
pub enum AtStart {
    /// Publish this team.
    Publish(Team),
    /// No team yet (or none of that name or id): [`run`] waits for it.
    Wait,
    /// Off: the name is ambiguous and no team was resolved from it before. The hub serves on;
    /// the log and the status page say why.
    Off,
}

impl AtStart {
    /// Whether the integrations task runs at all.
    pub fn runs(&self) -> bool {
        !matches!(self, AtStart::Off)
    }
}

/// Resolves `integrations.team` once, as the hub starts ([`home_feed::choose_team`]: the team
/// resolved before is kept by id). Nothing a team admin can type stops the start: an ambiguous name
/// with no earlier team turns the integrations off instead, loudly.
pub async fn team_at_start(state: &AppState) -> anyhow::Result<AtStart> {
    if !state.settings.integrations.active() {
        return Ok(AtStart::Wait);
    }
    let wanted = &state.settings.integrations.team;
    match home_feed::choose_team(&state.store, wanted, state.clock.stamp()).await {
        Ok(Choice::Team(team)) => Ok(AtStart::Publish(team)),
        Ok(Choice::Wait(_)) => Ok(AtStart::Wait),
        Ok(Choice::Off(e)) => {
            tracing::error!(
                error = %e,
                "the integrations (Home Assistant, the MQTT feed) are OFF: set integrations.team to the id of \
                 the team to publish and restart the hub; everything else serves on"
            );
            Ok(AtStart::Off)
        }
        Err(e) => Err(anyhow::Error::new(e).context("reading the teams for the integrations")),
    }
}

/// Runs until shutdown. Started only while `integrations.home_assistant` or `.feed` is on.
/// `team` is [`team_at_start`]'s answer; the team is kept by id from then on.
pub async fn run(state: AppState, shutdown: CancellationToken, team: AtStart) -> anyhow::Result<()> {
    let settings = state.settings.integrations.clone();
    let topics = Topics::new(&settings.feed.root);
    let mut events = state.bus.subscribe("integrations");
    let bridge = if settings.bridge.host.trim().is_empty() {
        None
    } else {
        let birth = format!("{}/status", settings.home_assistant.discovery_prefix);
        let (bridge, _task) = bridge::start(&settings.bridge, &topics.hub_availability(), &birth, shutdown.clone())?;
        Some(bridge)
    };
    let team = match team {
        AtStart::Publish(team) => team,
        AtStart::Off => return Ok(()),
        AtStart::Wait => match wait_for_team(&state, &settings.team, &shutdown).await {
            Some(team) => team,
            None => return Ok(()),
        },
    };
    tracing::info!(
        team = %team.name,
        team_id = %team.id,
        home_assistant = settings.home_assistant.enabled,
        bridge = bridge.is_some(),
        root = %settings.feed.root,
        "integrations publishing"
    );
    let discovery = discovery::Context {
        prefix: settings.home_assistant.discovery_prefix.clone(),
        topics: topics.clone(),
        team_id: team.id.to_string(),
        team_name: team.name.clone(),
        version: env!("CARGO_PKG_VERSION").into(),
        dashboard_url: state.links.get(&state.settings).http_base.clone(),
    };
    let mut p = Publisher {
        state: state.clone(),
        topics,
        team,
        discovery,
        bridge,
        retained: BTreeMap::new(),
        known: HashSet::new(),
        public_pictures: false,
    };
    p.publish_retained(p.topics.hub_availability(), ONLINE.as_bytes().to_vec()).await;
    p.refresh().await;
    let mut tick = tokio::time::interval_at(Instant::now() + REFRESH_EVERY, REFRESH_EVERY);
    let mut due: Option<Instant> = None;
    loop {
        let bridge = p.bridge.clone();
        let resend = async move {
            match bridge {
                Some(b) => b.resend_wanted().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tick.tick() => p.refresh().await,
            _ = async { tokio::time::sleep_until(due.unwrap_or_else(Instant::now)).await }, if due.is_some() => {
                due = None;
                p.refresh().await;
            }
            _ = resend => p.resend_to_bridge(),
            event = events.recv() => {
                let Some(event) = event else { break };
                if event.tenant_id() != p.team.id {
                    continue; // other teams never reach the feed
                }
                match event {
                    Event::DetectionCreated(d) => p.detection(&d).await,
                    Event::AlertRaised { alert, .. } => p.publish(p.topics.alerts(), json_bytes(&*alert), false).await,
                    _ => {}
                }
                due.get_or_insert_with(|| Instant::now() + COALESCE);
            }
        }
    }
    p.publish_retained(p.topics.hub_availability(), OFFLINE.as_bytes().to_vec()).await;
    if let Some(b) = &p.bridge {
        b.close();
    }
    Ok(())
}

/// Resolves the configured team, waiting while the hub has none yet. `None` at shutdown. A name
/// that became ambiguous meanwhile is said loudly and waited out: stopping the hub would let any
/// user who makes a team of that name stop it.
async fn wait_for_team(state: &AppState, wanted: &str, shutdown: &CancellationToken) -> Option<Team> {
    let mut told = String::new();
    loop {
        match home_feed::choose_team(&state.store, wanted, state.clock.stamp()).await {
            Ok(Choice::Team(team)) => return Some(team),
            Err(e) => tracing::warn!(error = %e, "integrations could not read the teams"),
            Ok(Choice::Wait(e) | Choice::Off(e)) => {
                let said = e.to_string();
                if said != told {
                    match e {
                        FeedError::NoTeam => tracing::info!("integrations wait for the first team"),
                        e if e.needs_operator() => tracing::error!(error = %e, "integrations cannot start"),
                        e => tracing::warn!(error = %e, "integrations cannot start yet"),
                    }
                    told = said;
                }
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return None,
            _ = tokio::time::sleep(TEAM_RETRY) => {}
        }
    }
}

struct Publisher {
    state: AppState,
    topics: Topics,
    team: Team,
    discovery: discovery::Context,
    bridge: Option<Bridge>,
    /// The last payload of every retained topic, to skip repeats and to replay to the bridge.
    retained: BTreeMap<String, Vec<u8>>,
    /// Satellites whose discovery configs are out.
    known: HashSet<SatelliteId>,
    /// Whether the team's public page was on at the last refresh (picture links need it).
    public_pictures: bool,
}

impl Publisher {
    fn home_assistant(&self) -> bool {
        self.state.settings.integrations.home_assistant.enabled
    }

    async fn publish(&self, topic: String, payload: Vec<u8>, retain: bool) {
        if let Some(b) = &self.bridge {
            b.publish(&topic, &payload, retain);
        }
        if let Err(e) = self.state.mqtt.publish_with(topic, payload, 1, retain).await {
            tracing::debug!(error = %e, "integrations could not publish on the embedded broker");
        }
    }

    /// Publishes a retained message unless the same payload is already out.
    async fn publish_retained(&mut self, topic: String, payload: Vec<u8>) {
        if self.retained.get(&topic) == Some(&payload) {
            return;
        }
        self.retained.insert(topic.clone(), payload.clone());
        self.publish(topic, payload, true).await;
    }

    /// Clears a retained message (Home Assistant removes the entity of an emptied config).
    async fn clear_retained(&mut self, topic: String) {
        if self.retained.remove(&topic).is_some() {
            self.publish(topic, Vec::new(), true).await;
        }
    }

    fn resend_to_bridge(&self) {
        let Some(b) = &self.bridge else { return };
        for (topic, payload) in &self.retained {
            b.publish(topic, payload, true);
        }
    }

    fn image_url(&self, code: &str) -> Option<String> {
        self.public_pictures.then(|| {
            let base = &self.state.links.get(&self.state.settings).http_base;
            format!("{base}/api/public/{}/species/{code}/image", self.team.id)
        })
    }

    async fn detection(&mut self, d: &DetectionCreated) {
        let message = DetectionMessage::of(d, self.image_url(&d.species_code));
        self.publish(self.topics.detections(), json_bytes(&message), false).await;
    }

    /// Reads the team's figures and sends whatever changed.
    async fn refresh(&mut self) {
        let now = self.state.clock.stamp();
        let snapshot = match home_feed::snapshot(&self.state.store, self.team.id, now).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "integrations could not read the team's figures");
                return;
            }
        };
        self.public_pictures = snapshot.public_pictures;
        self.publish_hub(&snapshot).await;
        let present: HashSet<SatelliteId> = snapshot.satellites.iter().map(|s| s.id).collect();
        for s in &snapshot.satellites {
            self.publish_satellite(s).await;
        }
        let gone: Vec<SatelliteId> = self.known.difference(&present).copied().collect();
        for id in gone {
            self.forget_satellite(id).await;
        }
        self.known = present;
    }

    async fn publish_hub(&mut self, s: &Snapshot) {
        let version = env!("CARGO_PKG_VERSION");
        if self.home_assistant() {
            for (topic, body) in self.discovery.hub_configs() {
                self.publish_retained(topic, json_bytes(&body)).await;
            }
        }
        let state = HubState {
            team: &self.team.name,
            detections_today: s.today.detections,
            species_today: s.today.species,
            queue_length: s.queue_length,
            version,
        };
        self.publish_retained(self.topics.hub_state(), json_bytes(&state)).await;
    }

    async fn publish_satellite(&mut self, s: &SatelliteFacts) {
        if self.home_assistant() {
            for (topic, body) in self.discovery.satellite_configs(s) {
                self.publish_retained(topic, json_bytes(&body)).await;
            }
        }
        let online = s.last_seen_at.is_some() && s.offline_since.is_none();
        let availability = if online { ONLINE } else { OFFLINE };
        self.publish_retained(self.topics.satellite_availability(s.id), availability.as_bytes().to_vec()).await;
        // The attributes first, so whoever sees the new state finds them current.
        if let Some(last) = &s.last {
            let attributes = LastDetectionAttributes::of(last, self.image_url(&last.species_code));
            self.publish_retained(self.topics.last_detection(s.id), json_bytes(&attributes)).await;
        }
        self.publish_retained(self.topics.satellite_state(s.id), json_bytes(&SatelliteState::of(s))).await;
    }

    /// A deleted satellite: its device leaves Home Assistant and its retained states go.
    async fn forget_satellite(&mut self, id: SatelliteId) {
        let mut topics = self.discovery.satellite_config_topics(id);
        topics.extend([
            self.topics.satellite_state(id),
            self.topics.satellite_availability(id),
            self.topics.last_detection(id),
        ]);
        for topic in topics {
            self.clear_retained(topic).await;
        }
    }
}

fn json_bytes<T: serde::Serialize + ?Sized>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}
