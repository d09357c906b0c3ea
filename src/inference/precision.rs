//! Which copy of the network runs: the converted FP32 network, or the FP16 and INT8 copies that
//! `models/quantize.py` makes from it (agreement with FP32 in `agreement.json`, docs/classifier.md).
//!
//! The front end, the labels and the range model are the same for every precision; only the
//! network file differs. A model directory made before the quantised copies existed has no such
//! file: the hub then runs FP32 and says so in a warning, because a hub that names fewer birds a
//! little slower is better than a hub that names none.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ModelDir;

/// The numeric precision of the classifier network (`inference.precision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// The network as converted from BirdNET's FP32 TFLite model.
    #[default]
    Fp32,
    /// Weights and activations in half precision, FP32 at the edges.
    Fp16,
    /// Weights and activations quantised to 8-bit integers, calibrated on real recordings.
    Int8,
}

impl Precision {
    pub const ALL: [Precision; 3] = [Precision::Fp32, Precision::Fp16, Precision::Int8];

    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
            Precision::Int8 => "int8",
        }
    }

    /// The network file in the model directory.
    pub fn file_name(self) -> &'static str {
        match self {
            Precision::Fp32 => "birdnet_net.onnx",
            Precision::Fp16 => "birdnet_net_fp16.onnx",
            Precision::Int8 => "birdnet_net_int8.onnx",
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The network to load for `wanted`: its file when the directory has it, else FP32's, with a
/// warning that names the missing file and how to get it.
pub fn network_file(dir: &ModelDir, wanted: Precision) -> (Precision, PathBuf) {
    let path = dir.file(wanted.file_name());
    if wanted == Precision::Fp32 || path.is_file() {
        return (wanted, path);
    }
    tracing::warn!(
        precision = %wanted,
        missing = %path.display(),
        "the model directory has no {wanted} network; running fp32 instead (run models/fetch.sh to make the {wanted} copy)"
    );
    (Precision::Fp32, dir.file(Precision::Fp32.file_name()))
}
