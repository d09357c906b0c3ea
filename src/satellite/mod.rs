//! `birdhub satellite`: the reference recording satellite (SPEC 2.1-2.8 from the device's side).
//! It runs on a recording Pi, in the same binary as the hub, under its own systemd unit.
//!
//! Capture feeds 3 s chunks into the gate; what passes goes into the SQLite outbox first and is
//! published from there with QoS 1; an `ack` marks the row acked.
//!
//! - [`chunk`]: a captured chunk (48 kHz mono 16-bit PCM) and its WAV encoding.
//! - [`capture`]: sources (`dir:PATH`, `alsa:DEVICE`, `rtsp:URL`), decoding and chunking.
//! - [`gate`]: the RMS and classifier gates and the `filterStats` counters.
//! - [`outbox`]: the SQLite outbox, its caps and stats, the persisted filter counters and config.
//! - [`run`]: the running satellite: the pipeline and its side of the MQTT protocol.
//! - [`settings`]: the satellite's config file, written by `register` (mode 0600).

pub mod capture;
pub mod chunk;
pub mod gate;
pub mod outbox;
pub mod run;
pub mod settings;
