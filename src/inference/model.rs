//! ONNX Runtime: loading the shared library once per process, and the classifier network.
//!
//! The spectrogram is computed natively ([`Frontend`]); ONNX Runtime runs only the network
//! (`birdnet_net.onnx`, or its FP16/INT8 copy: [`Precision`]).
//! One session is created at load and shared by every worker thread (ort's `run` needs exclusive
//! access, so it sits behind a mutex; parallelism comes from batching and ORT's intra-op threads).

use std::{
    path::Path,
    sync::{
        Mutex, OnceLock, TryLockError,
        atomic::{AtomicUsize, Ordering},
    },
    time::Instant,
};

use ort::{
    environment::Environment,
    session::{RunOptions, Session, builder::GraphOptimizationLevel},
    value::Tensor,
};

use super::{
    MODEL_ID, ModelDir, ModelError,
    audio::WINDOW,
    frontend::Frontend,
    labels::Labels,
    precision::{self, Precision},
};

/// Loads `libonnxruntime.so` and creates the process-wide ORT environment (first call wins).
pub fn init_runtime(library: &Path) -> Result<&'static Environment, ModelError> {
    static ENV: OnceLock<Result<Environment, String>> = OnceLock::new();
    let result = ENV.get_or_init(|| {
        if !library.is_file() {
            return Err(format!("ONNX Runtime library not found at {}", library.display()));
        }
        ort::init_from(library)
            .map_err(|e| format!("cannot load {}: {e}", library.display()))?
            .with_name("birdhub")
            .build()
            .map_err(|e| e.to_string())
    });
    result.as_ref().map_err(|e| ModelError::Runtime(e.clone()))
}

/// Opens an ONNX model with `threads` intra-op threads.
///
/// Memory planning ("memory pattern") is off: ORT would plan one block per batch size it sees
/// (1 to 8 windows here) and keep the largest in its arena; allocating tensor by tensor from the
/// arena reuses freed space instead, which held 15 MB less for a batch of 8 at the same speed.
pub fn open_session(env: &Environment, path: &Path, threads: usize, spin: bool) -> Result<Session, ModelError> {
    if !path.is_file() {
        return Err(ModelError::Missing { what: "model file", path: path.to_owned() });
    }
    Session::builder(env)
        .map_err(ModelError::runtime)?
        .with_optimization_level(GraphOptimizationLevel::Level3)
        .map_err(ModelError::runtime)?
        .with_intra_threads(threads.max(1))
        .map_err(ModelError::runtime)?
        .with_inter_threads(1)
        .map_err(ModelError::runtime)?
        .with_intra_op_spinning(spin)
        .map_err(ModelError::runtime)?
        .with_memory_pattern(false)
        .map_err(ModelError::runtime)?
        .commit_from_file(path)
        .map_err(|e| ModelError::invalid(path, e))
}

/// How to load the classifier.
#[derive(Debug, Clone, Copy)]
pub struct ClassifierOptions {
    /// ONNX Runtime intra-op threads, and the threads one `logits` call spreads a batch's
    /// spectrograms over.
    pub threads: usize,
    /// Let ONNX Runtime's threads spin between calls: fastest alone, wasteful when the cores
    /// are shared with other work.
    pub spin: bool,
    /// Which copy of the network to run (FP32 when the directory lacks the one asked for).
    pub precision: Precision,
}

impl ClassifierOptions {
    /// One thread per core this process may use ([`super::cores::CoreBudget`]).
    pub fn all_cores() -> Self {
        Self { threads: super::cores::CoreBudget::current().cores, spin: true, precision: Precision::Fp32 }
    }
}

/// Options for `workers` threads sharing one classifier, by [`super::ThreadPlan`]: the network
/// keeps every allowed core (calls are serialised) without spinning; each worker spreads its
/// batch's spectrograms over its share of them. Returns the options and the front-end threads
/// per worker.
pub fn pool_options(workers: usize, precision: Precision) -> (ClassifierOptions, usize) {
    let plan = super::ThreadPlan::current(crate::config::WorkerCount::Threads(workers.max(1)));
    (plan.classifier_options(precision), plan.frontend_threads)
}

impl Default for ClassifierOptions {
    fn default() -> Self {
        Self::all_cores()
    }
}

/// The loaded classifier: front end + network + English labels.
pub struct Classifier {
    frontend: Frontend,
    /// Threads for the front end of a batch (by default the count ONNX Runtime uses).
    threads: usize,
    net: Mutex<Session>,
    /// The most windows one run had since the batch memory was last given back.
    largest: AtomicUsize,
    precision: Precision,
    labels: Labels,
    /// How long loading took (for `birdhub bench inference`).
    pub load_ms: f64,
}

impl Classifier {
    pub fn load(dir: &ModelDir, options: ClassifierOptions) -> Result<Self, ModelError> {
        let started = Instant::now();
        dir.check()?;
        let env = init_runtime(&dir.runtime_library())?;
        let frontend = Frontend::load(&dir.path)?;
        let labels = Labels::load(&dir.file("labels/en.txt"))?;
        let (precision, file) = precision::network_file(dir, options.precision);
        let net = open_session(env, &file, options.threads, options.spin)?;
        let outputs = net.outputs().len();
        if outputs != 1 {
            return Err(ModelError::invalid(&file, format!("{outputs} outputs, expected 1")));
        }
        Ok(Self {
            frontend,
            threads: options.threads.max(1),
            net: Mutex::new(net),
            largest: AtomicUsize::new(0),
            precision,
            labels,
            load_ms: started.elapsed().as_secs_f64() * 1e3,
        })
    }

    /// Sets how many threads one call spreads a batch's spectrograms over.
    pub fn with_frontend_threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }

    pub fn labels(&self) -> &Labels {
        &self.labels
    }

    pub fn model_id(&self) -> &'static str {
        MODEL_ID
    }

    /// The precision of the network that was loaded (FP32 when the one asked for was missing).
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The spectrogram of one 3 s window (`[2, 96, 511]` flattened).
    pub fn spectrogram(&self, window: &[f32]) -> Vec<f32> {
        let mut out = vec![0.0; self.frontend.output_len()];
        self.frontend.compute(window, &mut out);
        out
    }

    /// Logits for a batch of 3 s windows (each exactly 144000 samples at 48 kHz).
    pub fn logits(&self, windows: &[&[f32]]) -> Result<Vec<Vec<f32>>, ModelError> {
        if windows.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(bad) = windows.iter().find(|w| w.len() != WINDOW) {
            return Err(ModelError::Runtime(format!("a window has {} samples, expected {WINDOW}", bad.len())));
        }
        let per = self.frontend.output_len();
        let mut input = vec![0.0f32; per * windows.len()];
        // Spread the batch's spectrograms over the threads; each thread takes a contiguous share.
        let share = windows.len().div_ceil(self.threads);
        std::thread::scope(|scope| {
            for (ws, outs) in windows.chunks(share).zip(input.chunks_mut(share * per)) {
                scope.spawn(move || {
                    for (w, out) in ws.iter().zip(outs.chunks_mut(per)) {
                        self.frontend.compute(w, out);
                    }
                });
            }
        });
        self.run_net(input, windows.len())
    }

    /// Runs the network on precomputed spectrograms (`n` of them, concatenated).
    pub fn run_net(&self, spectrograms: Vec<f32>, n: usize) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut session = self.lock()?;
        self.largest.fetch_max(n, Ordering::Relaxed);
        self.run_locked(&mut session, spectrograms, n, None)
    }

    /// Gives back to the system the memory ONNX Runtime's arena kept for the largest batch since
    /// the last release (the arena never shrinks by itself: a backlog drained in batches of 8
    /// would leave ~55 MB held). Does nothing when no batch had more than one window. Costs one
    /// window's inference: ORT shrinks its arena only at the end of a run, so one window of
    /// silence is run with the shrinking run option. Call it when the queue goes idle; while
    /// another thread runs the network it does nothing (that thread's next idle call will).
    pub fn release_batch_memory(&self) -> Result<(), ModelError> {
        match self.net.try_lock() {
            Ok(mut session) => self.release_locked(&mut session),
            Err(TryLockError::WouldBlock) => Ok(()),
            Err(TryLockError::Poisoned(_)) => Err(ModelError::Runtime("a classifier thread panicked".into())),
        }
    }

    /// Runs `f` while no network run is in progress, after giving the batch memory back: for
    /// loading something large (the range model) without adding its peak to a batch's.
    pub fn exclusive_released<T>(&self, f: impl FnOnce() -> T) -> Result<T, ModelError> {
        let mut session = self.lock()?;
        self.release_locked(&mut session)?;
        Ok(f())
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Session>, ModelError> {
        self.net.lock().map_err(|_| ModelError::Runtime("a classifier thread panicked".into()))
    }

    fn release_locked(&self, session: &mut Session) -> Result<(), ModelError> {
        if self.largest.swap(0, Ordering::Relaxed) <= 1 {
            return Ok(());
        }
        let mut options = RunOptions::new().map_err(ModelError::runtime)?;
        options.set("memory.enable_memory_arena_shrinkage", "cpu:0").map_err(ModelError::runtime)?;
        self.run_locked(session, vec![0.0; self.frontend.output_len()], 1, Some(&options)).map(|_| ())
    }

    fn run_locked(
        &self,
        session: &mut Session,
        spectrograms: Vec<f32>,
        n: usize,
        options: Option<&RunOptions>,
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        let [b, m, f] = self.frontend.output_shape();
        let tensor = Tensor::from_array(([n, b, m, f], spectrograms)).map_err(ModelError::runtime)?;
        let outputs = match options {
            Some(o) => session.run_with_options(ort::inputs![tensor], o),
            None => session.run(ort::inputs![tensor]),
        }
        .map_err(ModelError::runtime)?;
        let (shape, data) = outputs[0].try_extract_tensor::<f32>().map_err(ModelError::runtime)?;
        let classes = self.labels.len();
        if shape.len() != 2 || shape[0] as usize != n || shape[1] as usize != classes {
            return Err(ModelError::Runtime(format!("unexpected output shape {shape:?} for {n} x {classes}")));
        }
        Ok(data.chunks(classes).map(<[f32]>::to_vec).collect())
    }
}
