//! Long-running background tasks, one file each, each with `run(state, shutdown)`.
//! `app` supervises them together with the HTTP server.

pub mod alert_sender;
pub mod alert_watch;
pub mod audio_retention;
pub mod backup;
pub mod birdweather_sender;
pub mod image_fetcher;
pub mod live_sessions;
pub mod registry;
pub mod retention;
pub mod satellite_monitor;
pub mod scheduled_exports;
