//! How `birdhub bench api` times a case: one keep-alive client requests the case's URLs in turn
//! and records, per request, the wall time and the SQLite work the hub did meanwhile (the store's
//! VM steps, `store::work`; the client is the hub's only caller, so the difference is the
//! request's). Then the case runs again with the whole process pinned to one core
//! (`taskset -a -p -c 0`), the nearest thing to a Raspberry Pi core a PC offers: the client's
//! share of that core is in the pinned figure, so it errs on the slow side.

use std::time::Instant;

use serde_json::Value;

use super::bench::percentile;
use crate::store::Store;

/// Untimed requests before each pass of a case.
pub const WARMUP: usize = 20;

/// One HTTP client with the session token, and the hub's store whose work it reads.
pub struct Getter {
    pub client: reqwest::Client,
    pub token: String,
    pub store: Store,
}

/// A case's figures: sorted latencies (ms) and sorted VM steps per request.
#[derive(Debug, Default)]
pub struct Timed {
    pub ms: Vec<f64>,
    pub steps: Vec<u64>,
    /// The request that did the most work, and its steps.
    pub costliest: Option<(u64, String)>,
}

impl Timed {
    pub fn p(&self, p: f64) -> f64 {
        percentile(&self.ms, p)
    }

    /// The median and the largest work of a request.
    pub fn work(&self) -> (u64, u64) {
        let median = self.steps.get(self.steps.len() / 2).copied().unwrap_or(0);
        (median, self.steps.last().copied().unwrap_or(0))
    }
}

impl Getter {
    pub async fn json(&self, url: &str) -> anyhow::Result<Value> {
        let resp = self.client.get(url).bearer_auth(&self.token).send().await?;
        let status = resp.status();
        let body = resp.text().await?;
        anyhow::ensure!(status.is_success(), "GET {url}: {status}: {body}");
        Ok(serde_json::from_str(&body)?)
    }

    /// Requests `urls` in turn; returns the figures after the warm-up. The first timed answer
    /// must hold rows under `key` (or be a detection, for `id`); a name search may match none of
    /// fewer species.
    pub async fn time(&self, urls: &[String], key: &str) -> anyhow::Result<Timed> {
        let mut timed =
            Timed { ms: Vec::with_capacity(urls.len()), steps: Vec::with_capacity(urls.len()), costliest: None };
        for (i, url) in urls.iter().enumerate() {
            let steps = self.store.vm_steps();
            let t = Instant::now();
            // The API reads the bearer token; dashboard pages read the session cookie.
            let resp = self
                .client
                .get(url)
                .bearer_auth(&self.token)
                .header(reqwest::header::COOKIE, format!("birdhub_session={}", self.token))
                .send()
                .await?;
            let status = resp.status();
            let body = resp.bytes().await?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let steps = self.store.vm_steps() - steps;
            anyhow::ensure!(
                status == reqwest::StatusCode::OK,
                "GET {url}: {status}: {}",
                String::from_utf8_lossy(&body)
            );
            if i == WARMUP && key != "-" && !url.contains("speciesSearch") {
                let v: Value = serde_json::from_slice(&body)?;
                let rows =
                    if key == "id" { v["id"].is_string() } else { v[key].as_array().is_some_and(|a| !a.is_empty()) };
                anyhow::ensure!(rows, "GET {url} returned nothing");
            }
            if i >= WARMUP {
                timed.ms.push(ms);
                timed.steps.push(steps);
                if timed.costliest.as_ref().is_none_or(|(most, _)| steps > *most) {
                    timed.costliest = Some((steps, url.clone()));
                }
            }
        }
        timed.ms.sort_by(f64::total_cmp);
        timed.steps.sort_unstable();
        Ok(timed)
    }
}

/// Pins every thread of this process to `cpus` (`taskset` list syntax, e.g. `0` or `0-1`).
/// Threads started later inherit the mask of the thread that starts them.
pub fn pin(cpus: &str) -> anyhow::Result<()> {
    let out = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &std::process::id().to_string()])
        .output()
        .map_err(|e| anyhow::anyhow!("running taskset (util-linux): {e}"))?;
    anyhow::ensure!(out.status.success(), "taskset -c {cpus}: {}", String::from_utf8_lossy(&out.stderr).trim());
    Ok(())
}

/// The CPUs this process may run on now, in `taskset` list syntax (what [`pin`] restores).
pub fn current() -> anyhow::Result<String> {
    let out = std::process::Command::new("taskset")
        .args(["-c", "-p", &std::process::id().to_string()])
        .output()
        .map_err(|e| anyhow::anyhow!("running taskset (util-linux): {e}"))?;
    anyhow::ensure!(out.status.success(), "taskset -p: {}", String::from_utf8_lossy(&out.stderr).trim());
    // "pid 42's current affinity list: 0,1"
    let text = String::from_utf8_lossy(&out.stdout);
    let list = text.rsplit_once(": ").map(|(_, l)| l.trim().to_owned());
    list.filter(|l| !l.is_empty()).ok_or_else(|| anyhow::anyhow!("taskset printed {text:?}"))
}
