//! The figures the integrations publish (Home Assistant, the MQTT feed): which team they are for,
//! and a snapshot of its satellites and today's counts. Only that team is ever read.

use crate::{
    domain::settings::TenantSettings,
    ids::TenantId,
    store::{
        self, Store,
        home_feed::{SatelliteFacts, TeamToday},
    },
    time::Timestamp,
};

#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    #[error("the hub has no team yet; the integrations start once one is created")]
    NoTeam,
    #[error("the hub has {0} teams: set integrations.team to the id of the one to publish")]
    WhichTeam(usize),
    #[error("integrations.team is {0:?}, but no team has that name or id")]
    UnknownTeam(String),
    #[error(
        "integrations.team is {name:?}, but {} teams have that name (in any case): {}. \
         Set integrations.team to the id of the team to publish",
        ids.len(),
        ids.iter().map(|(id, name)| format!("{id} ({name:?})")).collect::<Vec<_>>().join(", ")
    )]
    AmbiguousName { name: String, ids: Vec<(TenantId, String)> },
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl FeedError {
    /// Whether waiting cannot help: the configuration must change. The hub refuses to start then.
    pub fn needs_operator(&self) -> bool {
        matches!(self, FeedError::AmbiguousName { .. })
    }
}

/// The team the integrations publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Team {
    pub id: TenantId,
    pub name: String,
}

/// `wanted` is the configured `integrations.team`: an id, or a name in any case that exactly one
/// team has. Empty picks the hub's only team. Resolve it once and keep the id: a team created or
/// renamed later must not change which team is published.
pub async fn resolve_team(store: &Store, wanted: &str) -> Result<Team, FeedError> {
    let wanted = wanted.trim().to_owned();
    let teams = store.call(|c| store::tenants::list_all(c)).await?;
    let team = if wanted.is_empty() {
        match teams.as_slice() {
            [] => return Err(FeedError::NoTeam),
            [only] => only.clone(),
            many => return Err(FeedError::WhichTeam(many.len())),
        }
    } else if let Ok(id) = wanted.parse::<TenantId>() {
        // An id names one team; a team *named* like another team's id must not win.
        teams.into_iter().find(|t| t.id == id).ok_or(FeedError::UnknownTeam(wanted))?
    } else {
        let key = wanted.to_lowercase();
        let mut named: Vec<_> = teams.into_iter().filter(|t| t.name.to_lowercase() == key).collect();
        match named.len() {
            0 => return Err(FeedError::UnknownTeam(wanted)),
            1 => named.remove(0),
            _ => {
                let ids = named.into_iter().map(|t| (t.id, t.name)).collect();
                return Err(FeedError::AmbiguousName { name: wanted, ids });
            }
        }
    };
    Ok(Team { id: team.id, name: team.name })
}

/// Everything the integrations show, read in one go.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub satellites: Vec<SatelliteFacts>,
    pub today: TeamToday,
    /// Chunks waiting for the classifier, hub-wide.
    pub queue_length: u64,
    /// Whether the team's public page is on: its species pictures may then be linked.
    pub public_pictures: bool,
}

pub async fn snapshot(store: &Store, team: TenantId, now: Timestamp) -> Result<Snapshot, FeedError> {
    Ok(store
        .call(move |c| {
            let settings: TenantSettings = store::settings::load(c, &team.to_string())?;
            Ok(Snapshot {
                satellites: store::home_feed::satellites(c, team, now)?,
                today: store::home_feed::team_today(c, team, now)?,
                queue_length: store::jobs::stats(c, None)?.queued,
                public_pictures: settings.public_page_enabled,
            })
        })
        .await?)
}
