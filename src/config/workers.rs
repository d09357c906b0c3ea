//! `inference.workers`: `"auto"` (one thread per core this process may use) or a number, where 0
//! makes the hub a coordinator that runs no model.

use serde::{Deserialize, Serialize};

/// `inference.workers`: `"auto"` or a thread count (0: coordinator only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorkerCount {
    #[default]
    Auto,
    Threads(usize),
}

impl WorkerCount {
    /// The threads to start: for `auto`, one per core the process may use (affinity and cgroup
    /// quota included: `inference::cores`).
    pub fn threads(self) -> usize {
        match self {
            WorkerCount::Auto => crate::inference::cores::CoreBudget::current().cores,
            WorkerCount::Threads(n) => n,
        }
    }
}

impl Serialize for WorkerCount {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            WorkerCount::Auto => s.serialize_str("auto"),
            WorkerCount::Threads(n) => s.serialize_u64(*n as u64),
        }
    }
}

impl<'de> Deserialize<'de> for WorkerCount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) => Ok(WorkerCount::Threads(n as usize)),
            Raw::Text(t) if t.trim() == "auto" => Ok(WorkerCount::Auto),
            Raw::Text(t) => t
                .trim()
                .parse()
                .map(WorkerCount::Threads)
                .map_err(|_| serde::de::Error::custom(format!("workers is \"auto\" or a number, not {t:?}"))),
        }
    }
}
