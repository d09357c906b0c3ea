//! What `GET /metrics` reads at scrape time: the inference queue, the broker's clients and
//! messages (in the processes that run them), the database's size and this process's memory.
//! A figure that cannot be read is left out of the scrape and logged, never an error.

use std::path::Path;

use crate::{
    config::Mode,
    metrics::{Figures, QueueDepth},
    mqtt::MqttHandle,
    store::{self, Store},
};

/// The figures of this process, for [`crate::metrics::Metrics::render`].
pub async fn figures(store: &Store, mqtt: &MqttHandle, mode: Mode, data_dir: &Path) -> Figures {
    let mut figures = Figures {
        database_bytes: database_bytes(data_dir),
        sqlite_steps: store.vm_steps(),
        memory_bytes: super::service_registry::resident_memory_bytes(),
        ..Figures::default()
    };
    // A process in mode `api` has no queue and no broker of its own.
    if mode != Mode::Api {
        match store.call(|c| store::jobs::stats(c, None)).await {
            Ok(q) => {
                figures.inference_queue = Some(QueueDepth { queued: q.queued, running: q.running, failed: q.failed })
            }
            Err(e) => tracing::warn!(error = %e, "metrics: could not read the inference queue"),
        }
        figures.mqtt_clients = mqtt.connected_clients().await;
        figures.mqtt_messages = Some(mqtt.meter().received());
    }
    figures
}

/// The database file and its write-ahead log, in bytes (a missing file counts as 0).
fn database_bytes(data_dir: &Path) -> u64 {
    ["birdhub.db", "birdhub.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(data_dir.join(f)).ok())
        .map(|m| m.len())
        .sum()
}
