//! BirdWeather sharing per satellite (issue 38, docs/birdweather.md): the setting (a station
//! token sealed with the hub's key, on/off, the minimum confidence), its status, the read-only
//! token test, and ([`send`]) one attempt of a queued detection. The token never leaves this
//! module in clear except towards BirdWeather: answers carry `tokenSet` and its last 4
//! characters.

mod send;

use std::sync::Arc;

use serde::Serialize;

use crate::{
    auth::secretbox::SecretBox,
    birdweather::{
        self,
        client::{Client, Outcome},
    },
    clock::Clock,
    config::BirdweatherSettings,
    ids::SatelliteId,
    objects::ObjectStore,
    store::{
        self, Store,
        birdweather::{Counts, Recent, StationChange},
    },
    time::Timestamp,
};

/// How many of the latest outbox rows the status lists.
const RECENT: u32 = 8;

/// Everything sharing needs. Cheap to clone.
#[derive(Clone)]
pub struct Sharing {
    store: Store,
    objects: ObjectStore,
    secrets: SecretBox,
    clock: Clock,
    settings: Arc<BirdweatherSettings>,
    client: Client,
}

#[derive(Debug, thiserror::Error)]
pub enum BirdweatherError {
    #[error("There is no such satellite in this team.")]
    SatelliteNotFound,
    #[error(
        "a BirdWeather station token is 4 to 200 letters, digits, '-' or '_' (copy it from app.birdweather.com/account/stations)"
    )]
    InvalidToken,
    #[error("give the station's BirdWeather token first")]
    TokenRequired,
    #[error("minConfidence must be between 0.01 and 1")]
    InvalidMinConfidence,
    #[error("this satellite does not share with BirdWeather")]
    NotConfigured,
    #[error("the stored token does not open with this hub's key ({0}); enter the token again")]
    Secrets(String),
    #[error(transparent)]
    Store(store::Error),
}

super::from_store_error!(BirdweatherError, not_found => SatelliteNotFound);

/// A satellite's BirdWeather setting and status, as the API answers it. Never the token.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = BirdweatherView)]
pub struct View {
    pub satellite_id: SatelliteId,
    /// Whether a station token is stored (sealed).
    pub token_set: bool,
    /// The token's last 4 characters, to tell tokens apart.
    pub token_last4: Option<String>,
    pub enabled: bool,
    /// Detections below this confidence are not shared.
    pub min_confidence: f64,
    pub status: Status,
}

/// What became of the satellite's detections.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = BirdweatherStatus)]
pub struct Status {
    #[serde(flatten)]
    pub counts: Counts,
    pub last_success_at: Option<Timestamp>,
    /// The last failure, in words (never the token).
    pub last_error: Option<String>,
    pub last_error_at: Option<Timestamp>,
    /// Failing again and again, the station waits until then.
    pub paused_until: Option<Timestamp>,
    /// The latest detections in the outbox, newest first.
    pub recent: Vec<Recent>,
}

/// The change a `PUT` asks for.
#[derive(Debug, Clone, Default)]
pub struct Change {
    pub token: Option<String>,
    pub enabled: Option<bool>,
    pub min_confidence: Option<f64>,
}

/// What the token test found (`POST /satellites/{id}/birdweather/test`).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = BirdweatherTestReport)]
pub struct TestReport {
    pub ok: bool,
    pub http_status: Option<u16>,
    /// The station's detections and species today, when the token works.
    pub detections: Option<i64>,
    pub species: Option<i64>,
    /// What happened, in words for a person.
    pub summary: String,
}

impl Sharing {
    pub fn new(
        store: &Store,
        objects: &ObjectStore,
        secrets: &SecretBox,
        clock: &Clock,
        settings: &BirdweatherSettings,
    ) -> Self {
        Self {
            store: store.clone(),
            objects: objects.clone(),
            secrets: secrets.clone(),
            clock: clock.clone(),
            client: Client::new(&settings.base_url, settings.timeout()),
            settings: Arc::new(settings.clone()),
        }
    }

    /// The setting and status of `sat` (already checked to be the caller's).
    pub async fn view(&self, sat: SatelliteId) -> Result<View, BirdweatherError> {
        let found = self
            .store
            .call(move |c| {
                let station = store::birdweather::station(c, sat)?;
                let counts = store::birdweather::counts(c, sat)?;
                let recent = store::birdweather::recent(c, sat, RECENT)?;
                Ok((station, counts, recent))
            })
            .await?;
        let (station, counts, recent) = found;
        let status = Status {
            counts,
            last_success_at: station.as_ref().and_then(|s| s.last_success_at),
            last_error: station.as_ref().and_then(|s| s.last_error.clone()),
            last_error_at: station.as_ref().and_then(|s| s.last_error_at),
            paused_until: station.as_ref().and_then(|s| s.paused_until).filter(|t| *t > self.clock.stamp()),
            recent,
        };
        Ok(match station {
            Some(s) => View {
                satellite_id: sat,
                token_set: true,
                token_last4: Some(s.token_hint),
                enabled: s.enabled,
                min_confidence: s.min_confidence,
                status,
            },
            None => View {
                satellite_id: sat,
                token_set: false,
                token_last4: None,
                enabled: false,
                min_confidence: birdweather::DEFAULT_MIN_CONFIDENCE,
                status,
            },
        })
    }

    /// Stores a change: a new token is sealed before it reaches the store.
    pub async fn set(&self, sat: SatelliteId, change: Change) -> Result<View, BirdweatherError> {
        let token = change.token.as_deref().map(str::trim).filter(|t| !t.is_empty());
        if token.is_some_and(|t| !birdweather::valid_token(t)) {
            return Err(BirdweatherError::InvalidToken);
        }
        if change.min_confidence.is_some_and(|m| !(0.01..=1.0).contains(&m)) {
            return Err(BirdweatherError::InvalidMinConfidence);
        }
        let sealed = token.map(|t| (self.secrets.seal(t.as_bytes()), birdweather::hint(t)));
        let now = self.clock.stamp();
        super::in_tx(&self.store, move |tx| {
            let before = store::birdweather::station(tx, sat)?;
            if before.is_none() && sealed.is_none() {
                return Err(BirdweatherError::TokenRequired);
            }
            let ch = StationChange {
                token: sealed.as_ref().map(|(s, h)| (s.as_str(), h.as_str())),
                enabled: change.enabled.or(before.as_ref().map(|b| b.enabled)).unwrap_or(true),
                min_confidence: change
                    .min_confidence
                    .or(before.as_ref().map(|b| b.min_confidence))
                    .unwrap_or(birdweather::DEFAULT_MIN_CONFIDENCE),
            };
            store::birdweather::put_station(tx, sat, &ch, now)?;
            Ok(())
        })
        .await?;
        self.view(sat).await
    }

    /// Stops sharing and forgets the token; queued detections are skipped.
    pub async fn remove(&self, sat: SatelliteId) -> Result<(), BirdweatherError> {
        let now = self.clock.stamp();
        let removed = self.store.call(move |c| store::birdweather::delete_station(c, sat, now)).await?;
        if removed { Ok(()) } else { Err(BirdweatherError::NotConfigured) }
    }

    /// Checks the stored token with the one documented read (`GET /stations/{token}/stats`);
    /// posts nothing.
    pub async fn test(&self, sat: SatelliteId) -> Result<TestReport, BirdweatherError> {
        let station = self
            .store
            .call(move |c| store::birdweather::station(c, sat))
            .await?
            .ok_or(BirdweatherError::NotConfigured)?;
        let token = self.open(&station.token_sealed)?;
        Ok(match self.client.stats(&token).await {
            Outcome::Done(s) => TestReport {
                ok: true,
                http_status: Some(200),
                detections: Some(s.detections),
                species: Some(s.species),
                summary: format!(
                    "BirdWeather knows this station: {} detection{} of {} species today.",
                    s.detections,
                    if s.detections == 1 { "" } else { "s" },
                    s.species
                ),
            },
            Outcome::Retry(p) | Outcome::Final(p) => {
                let summary = match p.http_status {
                    Some(401 | 403) => {
                        "BirdWeather refused the token: check it on app.birdweather.com/account/stations.".to_owned()
                    }
                    Some(404) => "BirdWeather does not know this station: check the token.".to_owned(),
                    _ => format!("The test did not work: {}.", p.words),
                };
                TestReport { ok: false, http_status: p.http_status, detections: None, species: None, summary }
            }
        })
    }

    fn open(&self, sealed: &str) -> Result<String, BirdweatherError> {
        let plain = self.secrets.open(sealed).map_err(|e| BirdweatherError::Secrets(e.to_string()))?;
        String::from_utf8(plain).map_err(|_| BirdweatherError::Secrets("not text".into()))
    }

    pub fn settings(&self) -> &BirdweatherSettings {
        &self.settings
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    pub fn store(&self) -> &Store {
        &self.store
    }
}
