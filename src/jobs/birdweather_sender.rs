//! Sends the BirdWeather outbox (docs/birdweather.md): every second it reads the due rows (the
//! oldest of each station that is not paused) and starts an attempt for each station that has
//! none in flight and whose last upload is older than the rate cap
//! (`birdweather.min_interval_secs`). Attempts run on their own tasks, so one slow station
//! delays only itself. The rows are in the database: a restarted hub goes on where the last one
//! stopped, and a BirdWeather that was down gets everything once it is back.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::{state::AppState, store, usecases::birdweather::Sharing};

const POLL: Duration = Duration::from_secs(1);
/// Stations served at once.
const STATIONS: u32 = 16;

pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    let sharing = Sharing::new(&state.store, &state.objects, &state.secrets, &state.clock, &state.settings.birdweather);
    let gap = Duration::from_secs(state.settings.birdweather.min_interval_secs);
    let in_flight: Arc<Mutex<HashSet<i64>>> = Arc::default();
    let mut last_upload: HashMap<i64, Instant> = HashMap::new();
    let freed = Arc::new(Notify::new());
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
            _ = freed.notified() => {}
        }
        let now = state.clock.stamp();
        let due = match state.store.call(move |c| store::birdweather::due(c, now, STATIONS)).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the BirdWeather outbox");
                continue;
            }
        };
        for row in due {
            let station = row.satellite_pk;
            if last_upload.get(&station).is_some_and(|at| at.elapsed() < gap) {
                continue;
            }
            if !in_flight.lock().unwrap_or_else(|e| e.into_inner()).insert(station) {
                continue;
            }
            last_upload.insert(station, Instant::now());
            let (sharing, in_flight, freed) = (sharing.clone(), in_flight.clone(), freed.clone());
            tokio::spawn(async move {
                if let Err(e) = sharing.attempt(row).await {
                    tracing::warn!(error = %e, "could not record a BirdWeather attempt");
                }
                in_flight.lock().unwrap_or_else(|e| e.into_inner()).remove(&station);
                freed.notify_one();
            });
        }
        last_upload.retain(|_, at| at.elapsed() < gap);
    }
}
