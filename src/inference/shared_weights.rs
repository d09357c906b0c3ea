//! One copy of the network's weights for every session of a classifier.
//!
//! ONNX Runtime's graph optimiser rewrites the weights as it loads a model (it folds batch
//! normalisation into the convolutions and, on x86, reorders them for its blocked kernels), so
//! every session holds its own 51 MB, even when they share pre-packed weights. With a session per
//! inference worker, the second worker cost as much memory as the first.
//!
//! Instead the classifier optimises the model once: ONNX Runtime writes the optimised graph to a
//! private temporary directory, its weights in a file beside it. The hub reads those weights into
//! tensors once and opens each session on the optimised graph (no further optimisation) with the
//! same tensors as its initializers, which ONNX Runtime uses in place. The optimised graph is for
//! this machine only (its reordered layout depends on the CPU), so it is never kept.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use ort::{
    environment::Environment,
    session::{Session, builder::GraphOptimizationLevel},
    value::{DynValue, Tensor},
};

use super::{ModelError, onnx_proto};

/// The optimised graph and the weights file ONNX Runtime writes beside it.
const GRAPH_FILE: &str = "net.onnx";
const WEIGHTS_FILE: &str = "net.bin";
/// Tensors smaller than this stay inside the graph (shapes and axes that shape inference reads).
const EXTERNAL_MIN_BYTES: &str = "1024";

/// The optimised graph (in a temporary directory removed on drop) and its weights as tensors.
pub(super) struct SharedWeights {
    dir: TempDir,
    initializers: Vec<(String, Arc<DynValue>)>,
    /// Bytes of weights held once for all sessions.
    pub bytes: u64,
}

impl SharedWeights {
    /// Optimises `file` once, as a session with `threads` intra-op threads would, and reads the
    /// weights ONNX Runtime wrote.
    pub fn prepare(env: &Environment, file: &Path, threads: usize) -> Result<Self, ModelError> {
        let dir = TempDir::new()?;
        let graph = dir.0.join(GRAPH_FILE);
        let optimiser = Session::builder(env)
            .map_err(ModelError::runtime)?
            .with_optimization_level(GraphOptimizationLevel::Level3)
            .map_err(ModelError::runtime)?
            .with_intra_threads(threads.max(1))
            .map_err(ModelError::runtime)?
            .with_optimized_model_path(&graph)
            .map_err(ModelError::runtime)?
            .with_config_entry("session.optimized_model_external_initializers_file_name", WEIGHTS_FILE)
            .map_err(ModelError::runtime)?
            .with_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", EXTERNAL_MIN_BYTES)
            .map_err(ModelError::runtime)?
            .commit_from_file(file)
            .map_err(|e| ModelError::invalid(file, e))?;
        drop(optimiser);
        let limit = std::fs::metadata(file).map_err(|e| ModelError::io(file, e))?.len().saturating_mul(4);
        let tensors = onnx_proto::external_initializers(&read_bounded(&graph, limit)?)
            .map_err(|e| ModelError::invalid(&graph, e))?;
        let weights_path = dir.0.join(WEIGHTS_FILE);
        let weights = if tensors.is_empty() { Vec::new() } else { read_bounded(&weights_path, limit)? };
        let mut initializers = Vec::with_capacity(tensors.len());
        let mut bytes = 0;
        for t in &tensors {
            if t.location != WEIGHTS_FILE {
                return Err(ModelError::invalid(&graph, format!("{} is stored in {:?}", t.name, t.location)));
            }
            // A type without a tensor element here stays in the file: each session reads its own.
            if let Some(value) = tensor_value(t, &weights).map_err(|e| ModelError::invalid(&weights_path, e))? {
                bytes += t.length;
                initializers.push((t.name.clone(), Arc::new(value)));
            }
        }
        Ok(Self { dir, initializers, bytes })
    }

    /// The optimised graph to open sessions on.
    pub fn graph(&self) -> PathBuf {
        self.dir.0.join(GRAPH_FILE)
    }

    /// The weights, by initializer name, to hand every session.
    pub fn initializers(&self) -> &[(String, Arc<DynValue>)] {
        &self.initializers
    }

    /// Removes the optimised graph and its weights file once every session is open (the
    /// tensors stay in memory).
    pub fn remove_files(&mut self) {
        self.dir.remove();
    }
}

/// The tensor of one external initializer, its bytes copied out of `weights` (`None` for an
/// element type it has no Rust type for).
fn tensor_value(t: &onnx_proto::ExternalTensor, weights: &[u8]) -> Result<Option<DynValue>, String> {
    let start = usize::try_from(t.offset).map_err(|_| "offset out of range")?;
    let len = usize::try_from(t.length).map_err(|_| "length out of range")?;
    let bytes = start
        .checked_add(len)
        .and_then(|end| weights.get(start..end))
        .ok_or_else(|| format!("{} lies outside the weights file ({} bytes)", t.name, weights.len()))?;
    let elements = t.dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64)).ok_or("shape overflows")?;
    let shape: Vec<i64> = t.dims.clone();
    fn typed<T: bytemuck::Pod + ort::value::PrimitiveTensorElementType + std::fmt::Debug>(
        name: &str,
        shape: Vec<i64>,
        elements: u64,
        bytes: &[u8],
    ) -> Result<DynValue, String> {
        if elements.checked_mul(size_of::<T>() as u64) != Some(bytes.len() as u64) {
            return Err(format!("{name}: {} bytes for {elements} elements", bytes.len()));
        }
        let data: Vec<T> = bytemuck::pod_collect_to_vec(bytes);
        Tensor::from_array((shape, data)).map(|t| t.into_dyn()).map_err(|e| format!("{name}: {e}"))
    }
    let value = match t.data_type {
        1 => typed::<f32>(&t.name, shape, elements, bytes),
        2 => typed::<u8>(&t.name, shape, elements, bytes),
        3 => typed::<i8>(&t.name, shape, elements, bytes),
        5 => typed::<i16>(&t.name, shape, elements, bytes),
        6 => typed::<i32>(&t.name, shape, elements, bytes),
        7 => typed::<i64>(&t.name, shape, elements, bytes),
        10 => typed::<half::f16>(&t.name, shape, elements, bytes),
        11 => typed::<f64>(&t.name, shape, elements, bytes),
        _ => return Ok(None),
    };
    value.map(Some)
}

/// A file's bytes, refusing one larger than `limit`.
fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ModelError> {
    let len = std::fs::metadata(path).map_err(|e| ModelError::io(path, e))?.len();
    if len > limit {
        return Err(ModelError::invalid(path, format!("{len} bytes, more than the {limit} expected")));
    }
    std::fs::read(path).map_err(|e| ModelError::io(path, e))
}

/// A private directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<Self, ModelError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("birdhub-net-{}-{n}", std::process::id()));
        // A leftover of a crashed process with the same id is ours to replace.
        let _ = std::fs::remove_dir_all(&path);
        let mut builder = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&path).map_err(|e| ModelError::io(&path, e))?;
        Ok(Self(path))
    }

    fn remove(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        self.remove();
    }
}
