//! `birdhub satellite`: the reference recording satellite (SPEC 2.1-2.8 from the device's side).
//! It runs on a recording Pi, in the same binary as the hub, under its own systemd unit
//! (`birdhub-satellite.service`, or `birdhub-satellite@NAME.service` per extra microphone).
//!
//! Capture feeds chunks to the [`pipeline`]: the live session hears everything, the schedule
//! decides whether to record, the gate judges, and what passes goes into the SQLite outbox first.
//! The [`sender`] publishes the outbox with QoS 1; an `ack` marks a row acked.
//!
//! - [`chunk`]: a captured chunk (48 kHz mono 16-bit PCM) and its WAV encoding.
//! - [`capture`]: sources (`dir:PATH`, `alsa:DEVICE`, `rtsp:URL`), decoding and chunking.
//! - [`gate`]: the RMS and classifier gates and the `filterStats` counters.
//! - [`clock_sync`]: nothing is recorded before the system clock is synchronised (NTP).
//! - [`outbox`]: the SQLite outbox, its caps and stats, the persisted filter counters and config.
//! - [`run`]: starts the tasks below and holds what they share.
//! - [`pipeline`], [`sender`], [`link`] (the MQTT connection), [`remote`] (what the hub sends),
//!   [`status`] (heartbeat, telemetry), [`live`] (live audio), [`logs`] (log requests).
//! - [`settings`]: the satellite's config file, written by `register` (mode 0600).
//! - [`register`]: `birdhub satellite register`: find the hub, log in, register, save.

pub mod capture;
pub mod chunk;
pub mod clock_sync;
pub mod gate;
pub mod link;
pub mod live;
pub mod logs;
pub mod outbox;
pub mod pipeline;
pub mod register;
pub mod remote;
pub mod run;
pub mod sender;
pub mod settings;
pub mod status;
