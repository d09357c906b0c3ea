//! Naming the bird: the BirdNET 2.4 classifier run in-process through ONNX Runtime.
//!
//! - [`audio`]: WAV decoding, resampling to 48 kHz, 3 s windows.
//! - [`frontend`]: the spectrogram, computed natively (see `models/README.md`).
//! - [`model`]: the ONNX Runtime library, the network session and batched logits.
//! - [`precision`]: FP32, FP16 or INT8: which copy of the network runs.
//! - [`labels`]: class names in every shipped language and the species-code scheme.
//! - [`range`]: the location/week meta-model ("expected here and now").
//! - [`worker`]: the inference threads behind the durable SQLite job queue.
//! - [`cores`]: the cores this process may use (affinity, cgroup quota) and why.
//! - [`thread_plan`]: workers, ONNX Runtime threads and batch fitted to those cores.
//! - [`predict`]: sigmoid with BirdNET's sensitivity, thresholds, top species.
//!
//! The model directory is made by `models/fetch.sh`. Inference never runs on the async runtime:
//! callers use dedicated threads or `spawn_blocking`.

pub mod audio;
pub mod cores;
pub mod frontend;
pub mod labels;
pub mod model;
pub mod policies;
pub mod precision;
pub mod predict;
pub mod range;
pub mod remote;
pub mod screen;
pub mod thread_plan;
pub mod translations;
pub mod worker;

use std::path::{Path, PathBuf};

pub use model::{Classifier, ClassifierOptions};
pub use precision::Precision;
pub use predict::Prediction;
pub use range::RangeFilter;
pub use thread_plan::ThreadPlan;

/// The directory name `models/fetch.sh` writes by default.
pub const DEFAULT_DIR_NAME: &str = "birdnet-v2.4";
/// Where the Debian package installs the model.
pub const SYSTEM_MODEL_DIR: &str = "/usr/share/birdhub/models/birdnet-v2.4";
/// Where the `.deb` installs ONNX Runtime (the model directory there holds no library).
pub const SYSTEM_RUNTIME_LIBRARY: &str = "/usr/lib/birdhub/libonnxruntime.so";
/// The identifier stored with every detection and calibration curve.
pub const MODEL_ID: &str = "birdnet-v2.4";

/// What to tell a person whose hub has no model.
pub const FETCH_HINT: &str = "run `models/fetch.sh` from the birdhub checkout (or `birdhub model fetch`), \
     or point inference.model_dir (BIRDHUB_INFERENCE__MODEL_DIR) at a model directory";

/// Why the classifier could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{what} not found at {path}; {FETCH_HINT}")]
    Missing { what: &'static str, path: PathBuf },
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{path} is not usable: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("ONNX Runtime: {0}")]
    Runtime(String),
    #[error(transparent)]
    Labels(#[from] labels::LabelError),
    #[error(transparent)]
    Audio(#[from] audio::AudioError),
}

impl ModelError {
    pub(crate) fn io(path: &Path, e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::NotFound {
            Self::Missing { what: "model file", path: path.to_owned() }
        } else {
            Self::Io { path: path.to_owned(), message: e.to_string() }
        }
    }

    pub(crate) fn invalid(path: &Path, e: impl std::fmt::Display) -> Self {
        Self::Invalid { path: path.to_owned(), message: e.to_string() }
    }

    pub(crate) fn runtime(e: impl std::fmt::Display) -> Self {
        Self::Runtime(e.to_string())
    }
}

/// A model directory as written by `models/fetch.sh`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelDir {
    pub path: PathBuf,
}

/// The files the hub needs from a model directory.
const REQUIRED: &[(&str, &str)] = &[
    ("birdnet_net.onnx", "the classifier network"),
    ("frontend.json", "the front-end description"),
    ("meta_model.onnx", "the range meta-model"),
    ("labels/en.txt", "the English labels"),
];

impl ModelDir {
    /// The configured directory, or the first that exists of `./models/birdnet-v2.4`, the source
    /// checkout's `models/birdnet-v2.4` and [`SYSTEM_MODEL_DIR`].
    pub fn locate(configured: &str) -> Result<Self, ModelError> {
        if !configured.is_empty() {
            let path = PathBuf::from(configured);
            return if path.is_dir() {
                Ok(Self { path })
            } else {
                Err(ModelError::Missing { what: "the model directory", path })
            };
        }
        let candidates = [
            PathBuf::from("models").join(DEFAULT_DIR_NAME),
            Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join(DEFAULT_DIR_NAME),
            PathBuf::from(SYSTEM_MODEL_DIR),
        ];
        candidates
            .iter()
            .find(|p| p.join("birdnet_net.onnx").is_file())
            .map(|p| Self { path: p.clone() })
            .ok_or_else(|| ModelError::Missing { what: "the model directory", path: candidates[0].clone() })
    }

    /// `ORT_DYLIB_PATH` when set, else the `libonnxruntime.so` in the directory (what
    /// `models/fetch.sh` makes), else the package's [`SYSTEM_RUNTIME_LIBRARY`].
    pub fn runtime_library(&self) -> PathBuf {
        if let Some(path) = std::env::var_os("ORT_DYLIB_PATH") {
            return PathBuf::from(path);
        }
        let beside = self.path.join("libonnxruntime.so");
        let system = PathBuf::from(SYSTEM_RUNTIME_LIBRARY);
        if !beside.is_file() && system.is_file() { system } else { beside }
    }

    /// Checks that every file the hub needs is present, naming the first missing one.
    pub fn check(&self) -> Result<(), ModelError> {
        for (file, what) in REQUIRED {
            let path = self.path.join(file);
            if !path.is_file() {
                return Err(ModelError::Missing { what, path });
            }
        }
        let lib = self.runtime_library();
        if !lib.is_file() {
            return Err(ModelError::Missing { what: "the ONNX Runtime library", path: lib });
        }
        Ok(())
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}
