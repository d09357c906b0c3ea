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
    #[error("the hub has {0} teams: set integrations.team to the name or id of the one to publish")]
    WhichTeam(usize),
    #[error("integrations.team is {0:?}, but no team has that name or id")]
    UnknownTeam(String),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// The team the integrations publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Team {
    pub id: TenantId,
    pub name: String,
}

/// `wanted` is the configured `integrations.team`: an id or a name (any case). Empty picks the
/// hub's only team.
pub async fn resolve_team(store: &Store, wanted: &str) -> Result<Team, FeedError> {
    let wanted = wanted.trim().to_owned();
    let teams = store.call(|c| store::tenants::list_all(c)).await?;
    let team = if wanted.is_empty() {
        match teams.as_slice() {
            [] => return Err(FeedError::NoTeam),
            [only] => only.clone(),
            many => return Err(FeedError::WhichTeam(many.len())),
        }
    } else {
        teams
            .into_iter()
            .find(|t| t.id.to_string() == wanted.to_lowercase() || t.name.eq_ignore_ascii_case(&wanted))
            .ok_or(FeedError::UnknownTeam(wanted))?
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
