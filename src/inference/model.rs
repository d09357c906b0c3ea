//! ONNX Runtime: loading the shared library once per process, and the classifier network.
//!
//! The spectrogram is computed natively ([`Frontend`]); ONNX Runtime runs only the network
//! (`birdnet_net.onnx`, or its FP16/INT8 copy: [`Precision`]).
//! A classifier holds one or more sessions of the network (ort's `run` needs exclusive access, so
//! each sits behind a mutex). The hub gives each inference worker a session of its own with one
//! intra-op thread per core it has, sharing one copy of the pre-packed weights: two single-thread
//! sessions on two cores drain 1.3x what one two-thread session does, as ORT's intra-op threads
//! wait on each other within every layer.

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
    session::{
        RunOptions, Session,
        builder::{GraphOptimizationLevel, PrepackedWeights},
    },
    value::TensorRef,
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
    open_session_sharing(env, path, threads, spin, None)
}

/// [`open_session`], sharing pre-packed weights with the other sessions given the same container.
fn open_session_sharing(
    env: &Environment,
    path: &Path,
    threads: usize,
    spin: bool,
    weights: Option<&PrepackedWeights>,
) -> Result<Session, ModelError> {
    if !path.is_file() {
        return Err(ModelError::Missing { what: "model file", path: path.to_owned() });
    }
    let mut builder = Session::builder(env)
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
        .map_err(ModelError::runtime)?;
    if let Some(w) = weights {
        builder = builder.with_prepacked_weights(w).map_err(ModelError::runtime)?;
    }
    builder.commit_from_file(path).map_err(|e| ModelError::invalid(path, e))
}

/// How to load the classifier.
#[derive(Debug, Clone, Copy)]
pub struct ClassifierOptions {
    /// ONNX Runtime intra-op threads of each session, and the threads one `logits` call spreads a
    /// batch's spectrograms over.
    pub threads: usize,
    /// Let ONNX Runtime's threads spin between calls: fastest alone, wasteful when the cores
    /// are shared with other work.
    pub spin: bool,
    /// Which copy of the network to run (FP32 when the directory lacks the one asked for).
    pub precision: Precision,
    /// Sessions of the network that may run at once (one per inference worker in the hub).
    pub sessions: usize,
}

impl ClassifierOptions {
    /// One session with a thread per core this process may use ([`super::cores::CoreBudget`]).
    pub fn all_cores() -> Self {
        Self { threads: super::cores::CoreBudget::current().cores, spin: true, precision: Precision::Fp32, sessions: 1 }
    }
}

/// Options for `workers` threads sharing one classifier, by [`super::ThreadPlan`]: a session per
/// worker, each with its share of the allowed cores (at least one thread) and no spinning.
/// Returns the options and the front-end threads per worker.
pub fn pool_options(workers: usize, precision: Precision) -> (ClassifierOptions, usize) {
    let plan = super::ThreadPlan::current(crate::config::WorkerCount::Threads(workers.max(1)));
    (plan.classifier_options(precision), plan.frontend_threads)
}

impl Default for ClassifierOptions {
    fn default() -> Self {
        Self::all_cores()
    }
}

/// One session of the network.
struct Net {
    session: Mutex<Session>,
    /// The most windows one run had since the batch memory was last given back.
    largest: AtomicUsize,
}

thread_local! {
    /// The calling thread's batch of spectrograms, reused from batch to batch (a fresh 3 MB
    /// buffer per batch of 8 cost page faults on every call).
    static INPUT: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The loaded classifier: front end + network + English labels.
pub struct Classifier {
    frontend: Frontend,
    /// Threads for the front end of a batch (by default the count ONNX Runtime uses).
    threads: usize,
    nets: Vec<Net>,
    /// The pre-packed weights the sessions share (kept alive with them).
    _weights: PrepackedWeights,
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
        let weights = PrepackedWeights::new();
        let mut nets = Vec::new();
        for _ in 0..options.sessions.max(1) {
            let session = open_session_sharing(env, &file, options.threads, options.spin, Some(&weights))?;
            let outputs = session.outputs().len();
            if outputs != 1 {
                return Err(ModelError::invalid(&file, format!("{outputs} outputs, expected 1")));
            }
            nets.push(Net { session: Mutex::new(session), largest: AtomicUsize::new(0) });
        }
        Ok(Self {
            frontend,
            threads: options.threads.max(1),
            nets,
            _weights: weights,
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

    /// Writes the spectrogram of one 3 s window into `out` (length `2 * 96 * 511`), as a batch
    /// does: for measuring the front end alone.
    pub fn spectrogram_into(&self, window: &[f32], out: &mut [f32]) {
        self.frontend.compute(window, out);
    }

    /// Logits for a batch of 3 s windows (each exactly 144000 samples at 48 kHz).
    pub fn logits(&self, windows: &[&[f32]]) -> Result<Vec<Vec<f32>>, ModelError> {
        if windows.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(bad) = windows.iter().find(|w| w.len() != WINDOW) {
            return Err(ModelError::Runtime(format!("a window has {} samples, expected {WINDOW}", bad.len())));
        }
        INPUT.with_borrow_mut(|input| {
            let per = self.frontend.output_len();
            input.resize(per * windows.len(), 0.0);
            let input = &mut input[..per * windows.len()];
            // Spread the batch's spectrograms over the threads; each thread takes a contiguous
            // share. One share runs here: a new thread would start with cold front-end buffers.
            let share = windows.len().div_ceil(self.threads);
            if share == windows.len() {
                for (w, out) in windows.iter().zip(input.chunks_mut(per)) {
                    self.frontend.compute(w, out);
                }
            } else {
                std::thread::scope(|scope| {
                    for (ws, outs) in windows.chunks(share).zip(input.chunks_mut(share * per)) {
                        scope.spawn(move || {
                            for (w, out) in ws.iter().zip(outs.chunks_mut(per)) {
                                self.frontend.compute(w, out);
                            }
                        });
                    }
                });
            }
            self.run_net(input, windows.len())
        })
    }

    /// Runs the network on precomputed spectrograms (`n` of them, concatenated), on the first
    /// session that is free (or, when all are busy, the one this thread's turn falls on).
    pub fn run_net(&self, spectrograms: &[f32], n: usize) -> Result<Vec<Vec<f32>>, ModelError> {
        let (index, mut session) = self.free_net()?;
        self.nets[index].largest.fetch_max(n, Ordering::Relaxed);
        self.run_locked(&mut session, spectrograms, n, None)
    }

    fn free_net(&self) -> Result<(usize, std::sync::MutexGuard<'_, Session>), ModelError> {
        for (i, net) in self.nets.iter().enumerate() {
            match net.session.try_lock() {
                Ok(s) => return Ok((i, s)),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Poisoned(_)) => return Err(poisoned()),
            }
        }
        let i = thread_turn() % self.nets.len();
        self.nets[i].session.lock().map(|s| (i, s)).map_err(|_| poisoned())
    }

    /// Gives back to the system the memory ONNX Runtime's arenas kept for the largest batch since
    /// the last release (an arena never shrinks by itself: a backlog drained in batches of 8
    /// would leave ~55 MB held). Does nothing for a session that ran no more than one window.
    /// Costs one window's inference: ORT shrinks its arena only at the end of a run, so one window
    /// of silence is run with the shrinking run option. Call it when the queue goes idle; a
    /// session another thread is running is skipped (that thread's next idle call takes it).
    pub fn release_batch_memory(&self) -> Result<(), ModelError> {
        for net in &self.nets {
            match net.session.try_lock() {
                Ok(mut session) => self.release_locked(net, &mut session)?,
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Poisoned(_)) => return Err(poisoned()),
            }
        }
        Ok(())
    }

    /// Runs `f` while no network run is in progress, after giving the batch memory back: for
    /// loading something large (the range model) without adding its peak to a batch's.
    pub fn exclusive_released<T>(&self, f: impl FnOnce() -> T) -> Result<T, ModelError> {
        let mut held = Vec::with_capacity(self.nets.len());
        for net in &self.nets {
            let mut session = net.session.lock().map_err(|_| poisoned())?;
            self.release_locked(net, &mut session)?;
            held.push(session);
        }
        Ok(f())
    }

    fn release_locked(&self, net: &Net, session: &mut Session) -> Result<(), ModelError> {
        if net.largest.swap(0, Ordering::Relaxed) <= 1 {
            return Ok(());
        }
        let mut options = RunOptions::new().map_err(ModelError::runtime)?;
        options.set("memory.enable_memory_arena_shrinkage", "cpu:0").map_err(ModelError::runtime)?;
        let silence = vec![0.0; self.frontend.output_len()];
        self.run_locked(session, &silence, 1, Some(&options)).map(|_| ())
    }

    fn run_locked(
        &self,
        session: &mut Session,
        spectrograms: &[f32],
        n: usize,
        options: Option<&RunOptions>,
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        let [b, m, f] = self.frontend.output_shape();
        let tensor = TensorRef::from_array_view(([n, b, m, f], spectrograms)).map_err(ModelError::runtime)?;
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

fn poisoned() -> ModelError {
    ModelError::Runtime("a classifier thread panicked".into())
}

/// A number fixed per thread, spreading threads that find every session busy over them.
fn thread_turn() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static TURN: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TURN.with(|t| *t)
}
