//! Use cases: one function per thing a person or a device does (sign up, register a satellite,
//! vote, record a batch of detections ...). Each owns its transaction, takes only the handles it
//! needs (`&Store`, `&Clock`, a `TenantId` ...) and names every refusal in its own error enum.
//! `api`, `mqtt` and `jobs` call these; `api` maps the enums to statuses and codes in one place
//! (`api/usecase_errors.rs`). No HTTP or MQTT type, no string error and no `AppState` in here.

/// `impl From<store::Error>` for a use case's error enum: the store's `NotFound` (and, where given,
/// `Duplicate`) become what they mean for that use case; anything else is its `Store` variant.
macro_rules! from_store_error {
    ($ty:ident, not_found => $nf:ident $(, duplicate => $dup:ident)?) => {
        impl From<crate::store::Error> for $ty {
            fn from(e: crate::store::Error) -> Self {
                match e {
                    crate::store::Error::NotFound => Self::$nf,
                    $(crate::store::Error::Duplicate => Self::$dup,)?
                    other => Self::Store(other),
                }
            }
        }
    };
}
use from_store_error;

/// Runs `f` in an IMMEDIATE transaction on a store thread and commits when it returns `Ok`; an
/// `Err` (the use case's own refusal) rolls back.
pub(crate) async fn in_tx<T, E, F>(store: &crate::store::Store, f: F) -> Result<T, E>
where
    T: Send + 'static,
    E: From<crate::store::Error> + Send + 'static,
    F: FnOnce(&rusqlite::Transaction<'_>) -> Result<T, E> + Send + 'static,
{
    store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            Ok(match f(&tx) {
                Ok(v) => {
                    tx.commit()?;
                    Ok(v)
                }
                Err(e) => Err(e),
            })
        })
        .await?
}

pub mod access_changes;
pub mod accounts;
pub mod alert_channels;
pub mod alert_delivery;
pub mod alert_rules;
pub mod alert_watch;
pub mod alerting;
pub mod audio_retention;
pub mod backup;
pub mod birdweather;
pub mod broker_logins;
pub mod calibration;
pub mod chunks;
pub mod clock_health;
pub mod detection_settings;
pub mod detections;
pub mod expected_species;
pub mod exports;
pub mod first_run;
pub mod home_feed;
pub mod import_refusals;
pub mod import_uploads;
pub mod imports;
pub mod learned_thresholds;
pub mod membership;
pub mod metrics_scrape;
pub mod mfa;
pub mod mobile_releases;
pub mod monitor;
pub mod passkeys;
pub mod passwords;
pub mod public_page;
pub mod satellite_live;
pub mod satellite_remote;
pub mod satellite_schedule;
pub mod satellites;
pub mod scheduled_exports;
pub mod service_registry;
pub mod settings;
pub mod share_links;
pub mod shared_detection;
pub mod sign_in;
pub mod species;
pub mod species_images;
pub mod species_rank;
pub mod species_threshold;
pub mod stats;
pub mod system_status;
pub mod system_versions;
pub mod team_credentials;
pub mod verification;
pub mod weather;
pub mod worker_keys;
pub mod workers;
pub mod zones;
