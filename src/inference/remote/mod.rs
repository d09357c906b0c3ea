//! Inference on other machines (issue 49): `birdhub worker` processes join a shared subscription
//! on the hub's broker (or on a mosquitto the satellites use too) and turn audio into scores; the
//! hub keeps everything else.
//!
//! - [`wire`]: the job, result and join messages, and their bounds.
//! - [`pool`]: the hub's side: joins, offers with their lease tokens, room for more.
//! - [`node`]: the worker process.
//!
//! The SQLite queue stays the truth: a hub slot claims jobs with a lease deadline
//! ([`crate::store::jobs::claim_until`]), offers their windows to the group and waits; no answer
//! by the deadline puts them back in the queue.

pub mod node;
pub mod pool;
pub mod wire;

use std::path::Path;

use sha2::{Digest, Sha256};

pub use pool::{RemotePool, RemoteWorker};

/// The one shared-subscription group of a hub's workers.
pub const GROUP: &str = "birdhub-workers";

/// The client id prefix of workers: `worker-<key id>`.
pub const CLIENT_PREFIX: &str = "worker-";

/// How long an offer may go unanswered before its jobs go back to the queue (the default of
/// `inference.lease_seconds`).
pub const DEFAULT_LEASE_SECONDS: u64 = 30;

/// SHA-256 (hex) of the model directory's English labels file: the label set, in order, that a
/// worker must share with its hub.
pub fn labels_fingerprint(model_dir: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(model_dir.join("labels/en.txt"))?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

/// A worker key as handed out once: `bhw.<id>.<secret>`. The worker logs in as `worker-<id>`
/// with the secret as its password.
pub fn format_key(id: uuid::Uuid, secret: &str) -> String {
    format!("bhw.{id}.{secret}")
}

/// The id and secret of a worker key; `None` when it is not one.
pub fn parse_key(key: &str) -> Option<(uuid::Uuid, String)> {
    let rest = key.trim().strip_prefix("bhw.")?;
    let (id, secret) = rest.split_once('.')?;
    let ok = secret.len() == 64 && secret.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then_some((id.parse().ok()?, secret.to_owned()))
}
