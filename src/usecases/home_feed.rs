//! The figures the integrations publish (Home Assistant, the MQTT feed): which team they are for,
//! and a snapshot of its satellites and today's counts. Only that team is ever read.

use serde::{Deserialize, Serialize};

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
    /// Whether waiting cannot help: the configuration must change. The integrations stay off then
    /// (unless a team was resolved from the same setting before: that one is kept).
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

/// Where the team the integrations last published is kept (the `settings` table).
const KEPT_SCOPE: &str = "integrations";
const KEPT_KEY: &str = "team";

/// What the hub remembers about `integrations.team` across starts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptTeam {
    /// The configured value it was resolved from (trimmed, lower case): a changed setting is
    /// resolved afresh.
    pub wanted: String,
    /// The team last resolved from it.
    pub team_id: Option<TenantId>,
    /// Why no team is published, when none is.
    pub problem: Option<String>,
    /// Off until the operator acts (not merely waiting for a team).
    #[serde(default)]
    pub off: bool,
}

/// What the integrations do, as [`choose_team`] decides.
#[derive(Debug)]
pub enum Choice {
    /// Publish this team.
    Team(Team),
    /// Not yet: no team, or none of that name or id; worth looking again.
    Wait(FeedError),
    /// Off until the operator names the team by its id (a name several teams share, and no team
    /// resolved from it before).
    Off(FeedError),
}

/// Which team to publish. The team resolved from the same `integrations.team` before is kept by
/// id as long as it exists, whatever any team is called since: a start must never depend on a
/// name a team admin can type. Without one, the name is resolved ([`resolve_team`]); an
/// ambiguous name then turns the integrations off (the hub serves on). The decision is stored.
pub async fn choose_team(store: &Store, wanted: &str, now: Timestamp) -> Result<Choice, store::Error> {
    let key = wanted.trim().to_lowercase();
    let before = kept_team(store).await?;
    let kept = before.as_ref().filter(|k| k.wanted == key).and_then(|k| k.team_id);
    if let Some(id) = kept {
        let team = store.call(move |c| Ok(store::tenants::list_all(c)?.into_iter().find(|t| t.id == id))).await?;
        if let Some(t) = team {
            let team = Team { id: t.id, name: t.name };
            keep(store, before, KeptTeam { wanted: key, team_id: Some(team.id), problem: None, off: false }, now)
                .await?;
            return Ok(Choice::Team(team));
        }
    }
    let choice = match resolve_team(store, wanted).await {
        Ok(team) => Choice::Team(team),
        Err(FeedError::Store(e)) => return Err(e),
        Err(e) if e.needs_operator() => Choice::Off(e),
        Err(e) => Choice::Wait(e),
    };
    let kept = match &choice {
        Choice::Team(t) => KeptTeam { wanted: key, team_id: Some(t.id), problem: None, off: false },
        Choice::Off(e) => KeptTeam { wanted: key, team_id: None, problem: Some(e.to_string()), off: true },
        Choice::Wait(e) => KeptTeam { wanted: key, team_id: None, problem: Some(e.to_string()), off: false },
    };
    keep(store, before, kept, now).await?;
    Ok(choice)
}

/// What [`choose_team`] decided last, for the status page.
pub async fn kept_team(store: &Store) -> Result<Option<KeptTeam>, store::Error> {
    let raw = store.call(|c| store::settings::get_one(c, KEPT_SCOPE, KEPT_KEY)).await?;
    Ok(raw.and_then(|r| serde_json::from_str(&r).ok()))
}

/// Stores `kept` unless it is what is stored already (the waiting integrations ask every few
/// seconds).
async fn keep(store: &Store, before: Option<KeptTeam>, kept: KeptTeam, now: Timestamp) -> Result<(), store::Error> {
    if before.as_ref() == Some(&kept) {
        return Ok(());
    }
    let json = serde_json::to_string(&kept).unwrap_or_default();
    store.call(move |c| store::settings::put_one(c, KEPT_SCOPE, KEPT_KEY, &json, now)).await
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
