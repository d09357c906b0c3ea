//! Passwords: argon2id hashes in PHC format, the strength rule, generated passwords, and
//! [`Passwords`], the bounded pool every hash and verification of the hub goes through.
//!
//! The rule: 10 to 256 characters, not all the same character. Length beats composition rules.
//! One argon2 run takes 19 MiB and tens of milliseconds of one core, so the hub never runs more
//! of them at once than it has cores: requests beyond that wait for a turn instead of taking
//! memory (60 parallel registrations once took a hub from 47 MB to 696 MB).

use std::sync::{
    Arc,
    atomic::{AtomicU64, AtomicUsize, Ordering},
};

use argon2::{Argon2, PasswordHasher, PasswordVerifier};
use rand::Rng;
use tokio::sync::{OnceCell, Semaphore};

pub const MIN_LEN: usize = 10;
pub const MAX_LEN: usize = 256;
/// The longest password the hub hashes or verifies, in bytes (256 characters of up to 4 bytes);
/// a longer one is refused before argon2 sees it.
pub const MAX_BYTES: usize = 1024;

/// Why a password was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeakPassword {
    #[error("password must be at least {MIN_LEN} characters")]
    TooShort,
    #[error("password must be at most {MAX_LEN} characters")]
    TooLong,
    #[error("password must not be one repeated character")]
    Repetitive,
}

pub fn check_strength(password: &str) -> Result<(), WeakPassword> {
    let n = password.chars().count();
    if n < MIN_LEN {
        return Err(WeakPassword::TooShort);
    }
    if n > MAX_LEN {
        return Err(WeakPassword::TooLong);
    }
    let mut chars = password.chars();
    let first = chars.next();
    if chars.all(|c| Some(c) == first) {
        return Err(WeakPassword::Repetitive);
    }
    Ok(())
}

/// An argon2id PHC string (`$argon2id$v=19$m=19456,t=2,p=1$...`) with a fresh random salt.
/// CPU-heavy (tens of milliseconds) and 19 MiB: the hub calls it through [`Passwords::hash`];
/// only test set-up and the cost benchmark call it directly.
pub fn hash(password: &str) -> anyhow::Result<String> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing password: {e}"))
}

/// Whether `password` matches the stored PHC string (constant-time inside argon2). The hub
/// calls it through [`Passwords::verify`].
pub fn verify(password: &str, phc: &str) -> bool {
    Argon2::default().verify_password(password.as_bytes(), phc).is_ok()
}

/// A random 20-character password without look-alike characters.
pub fn generate() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut rng = rand::rng();
    (0..20).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// Why a password could not be hashed.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("password must be at most {MAX_BYTES} bytes")]
    TooLong,
    #[error("{0}")]
    Failed(String),
}

/// The hub's one bound on concurrent argon2 runs (hashes and verifications alike), with counts a
/// test or an operator can read. Cheap to clone; every clone shares the bound.
#[derive(Clone)]
pub struct Passwords(Arc<Pool>);

struct Pool {
    /// One permit per argon2 run allowed at once.
    permits: Arc<Semaphore>,
    /// The number of permits, for [`PoolStats::limit`].
    limit: usize,
    /// Runs on a blocking thread right now.
    running: AtomicUsize,
    /// The most that ever ran at once.
    peak: AtomicUsize,
    /// Hashes made since start.
    hashes: AtomicU64,
    /// Verifications run since start (the decoy ones for unknown accounts included).
    verifications: AtomicU64,
    /// A hash of a random password, verified against when an account is unknown, so the answer
    /// takes as long as for a known one. Made through the pool on first use.
    decoy: OnceCell<String>,
}

/// What the pool has done, for tests and status pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    pub limit: usize,
    pub running: usize,
    pub peak: usize,
    pub hashes: u64,
    pub verifications: u64,
}

impl Default for Passwords {
    /// As many runs at once as the machine has cores.
    fn default() -> Self {
        Self::new(std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get))
    }
}

impl Passwords {
    /// A pool that runs at most `limit` (at least 1) argon2 runs at once.
    pub fn new(limit: usize) -> Self {
        let limit = limit.max(1);
        Self(Arc::new(Pool {
            permits: Arc::new(Semaphore::new(limit)),
            limit,
            running: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            hashes: AtomicU64::new(0),
            verifications: AtomicU64::new(0),
            decoy: OnceCell::new(),
        }))
    }

    pub fn stats(&self) -> PoolStats {
        let p = &self.0;
        PoolStats {
            limit: p.limit,
            running: p.running.load(Ordering::SeqCst),
            peak: p.peak.load(Ordering::SeqCst),
            hashes: p.hashes.load(Ordering::SeqCst),
            verifications: p.verifications.load(Ordering::SeqCst),
        }
    }

    /// Runs `work` on a blocking thread once a permit is free. The permit travels with the work,
    /// so a caller that gives up (a client that hangs up) cannot free it while argon2 still runs.
    async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, HashError> {
        let permit = self.0.permits.clone().acquire_owned().await.map_err(|e| HashError::Failed(e.to_string()))?;
        let pool = self.0.clone();
        tokio::task::spawn_blocking(move || {
            let now = pool.running.fetch_add(1, Ordering::SeqCst) + 1;
            pool.peak.fetch_max(now, Ordering::SeqCst);
            let out = work();
            pool.running.fetch_sub(1, Ordering::SeqCst);
            drop(permit);
            out
        })
        .await
        .map_err(|e| HashError::Failed(e.to_string()))
    }

    /// [`hash`] through the pool; a password over [`MAX_BYTES`] is refused without hashing.
    pub async fn hash(&self, password: String) -> Result<String, HashError> {
        if password.len() > MAX_BYTES {
            return Err(HashError::TooLong);
        }
        let pool = self.0.clone();
        self.run(move || {
            pool.hashes.fetch_add(1, Ordering::SeqCst);
            hash(&password).map_err(|e| HashError::Failed(e.to_string()))
        })
        .await?
    }

    /// [`verify`] through the pool; a password over [`MAX_BYTES`] is wrong without verifying.
    pub async fn verify(&self, password: String, phc: String) -> bool {
        if password.len() > MAX_BYTES {
            return false;
        }
        let pool = self.0.clone();
        let checked = self.run(move || {
            pool.verifications.fetch_add(1, Ordering::SeqCst);
            verify(&password, &phc)
        });
        match checked.await {
            Ok(ok) => ok,
            Err(e) => {
                tracing::error!(error = %e, "a password verification did not finish");
                false
            }
        }
    }

    /// Verifies against a decoy hash (always false), as long as a real verification takes.
    pub async fn verify_decoy(&self, password: String) {
        let decoy = self
            .0
            .decoy
            .get_or_try_init(|| self.hash(crate::auth::tokens::random_hex(16)))
            .await
            .cloned()
            .unwrap_or_default();
        self.verify(password, decoy).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_and_are_salted() {
        let a = hash("correct horse battery").expect("hash");
        let b = hash("correct horse battery").expect("hash");
        assert!(a.starts_with("$argon2id$"));
        assert_ne!(a, b, "each hash has its own salt");
        assert!(verify("correct horse battery", &a));
        assert!(!verify("correct horse batterz", &a));
        assert!(!verify("anything", "not a phc string"));
    }

    #[test]
    fn strength_rule() {
        assert_eq!(check_strength("short"), Err(WeakPassword::TooShort));
        assert_eq!(check_strength(&"a".repeat(12)), Err(WeakPassword::Repetitive));
        assert_eq!(check_strength(&"ab".repeat(200)), Err(WeakPassword::TooLong));
        assert_eq!(check_strength("ten chars!"), Ok(()));
        let generated = generate();
        assert_eq!(generated.len(), 20);
        assert_eq!(check_strength(&generated), Ok(()));
    }

    #[tokio::test]
    async fn the_pool_never_runs_more_than_its_limit() {
        let pool = Passwords::new(2);
        let phc = hash("correct horse battery").expect("hash");
        let runs = (0..12).map(|i| {
            let (pool, phc) = (pool.clone(), phc.clone());
            tokio::spawn(async move {
                if i % 2 == 0 {
                    pool.verify("correct horse battery".into(), phc).await
                } else {
                    pool.hash("another long password".into()).await.is_ok()
                }
            })
        });
        for run in futures_util::future::join_all(runs).await {
            assert!(run.expect("task"));
        }
        let stats = pool.stats();
        assert_eq!((stats.hashes, stats.verifications, stats.running), (6, 6, 0));
        assert!((1..=2).contains(&stats.peak), "peak {} within the limit of 2", stats.peak);
        assert!(matches!(pool.hash("x".repeat(MAX_BYTES + 1)).await, Err(HashError::TooLong)));
        assert!(!pool.verify("x".repeat(MAX_BYTES + 1), phc).await);
        assert_eq!(pool.stats().hashes + pool.stats().verifications, 12, "over-long ones never reach argon2");
    }
}
