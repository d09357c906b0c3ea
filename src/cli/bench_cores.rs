//! `birdhub bench pipeline --cores N`: the same bench again, pinned with `taskset` to CPUs
//! 0..N-1, so the whole hub (broker, ingest, model, database) runs on N cores and plans its
//! threads for N; and the figure the pinned run adds, satellites per core (docs/operations.md,
//! "Planning: satellites per core").

use std::{ffi::OsString, process::ExitCode};

use anyhow::Context;

use crate::inference::cores::{self, CoreBudget, plural};

/// Seconds of audio in a chunk: a satellite sends one every 3 s.
const CHUNK_SECONDS: f64 = 3.0;

#[derive(Debug, Clone, clap::Args)]
pub struct CoresArgs {
    /// Runs the whole bench pinned to CPUs 0..N-1 (with `taskset`): the hub plans its threads for
    /// N cores, and satellites per core are printed.
    #[arg(long, value_name = "N")]
    pub cores: Option<usize>,
    /// Percent of a satellite's chunks its own filter passes, for the second satellites-per-core
    /// figure. 25 is docs/scaling.md's typical garden station over a day: an assumption; read
    /// your own from the Satellites page's filter bars.
    #[arg(long, value_name = "PERCENT", default_value_t = 25.0)]
    pub pass_rate: f64,
    /// Set by `--cores` on the pinned run: how many cores it was pinned to.
    #[arg(long, hide = true, value_name = "N")]
    pub pinned: Option<usize>,
}

/// With `--cores N`: runs this very command again under `taskset -c 0-(N-1)` (without
/// `--cores`, with `--pinned N`) and returns its exit code. `None`: run the bench here.
pub async fn pinned_run(args: &CoresArgs) -> anyhow::Result<Option<ExitCode>> {
    anyhow::ensure!(args.pass_rate > 0.0 && args.pass_rate <= 100.0, "--pass-rate is a percent above 0, at most 100");
    let Some(n) = args.cores else { return Ok(None) };
    let budget = CoreBudget::current();
    anyhow::ensure!(n >= 1, "--cores must be at least 1");
    anyhow::ensure!(n <= budget.machine, "--cores {n}: this machine has {} online", plural(budget.machine, "core"));
    let cpus = if n == 1 { "0".to_owned() } else { format!("0-{}", n - 1) };
    if let Some(list) = &budget.affinity_list {
        anyhow::ensure!(
            cores::allows_first(list, n),
            "--cores {n} asks for CPUs {cpus}, but this process may only use CPUs {list} (its affinity)"
        );
    }
    let found = tokio::process::Command::new("taskset").arg("-V").output().await;
    anyhow::ensure!(
        found.is_ok_and(|o| o.status.success()),
        "--cores needs `taskset` (util-linux) to pin the bench, and it was not found"
    );
    let exe = std::env::current_exe().context("finding this executable")?;
    println!("birdhub bench pipeline: pinned to CPUs {cpus} with taskset");
    let status = tokio::process::Command::new("taskset")
        .arg("-c")
        .arg(&cpus)
        .arg(exe)
        .args(without_cores(std::env::args_os().skip(1)))
        .arg("--pinned")
        .arg(n.to_string())
        .status()
        .await
        .context("running taskset")?;
    Ok(Some(status.code().and_then(|c| u8::try_from(c).ok()).map_or(ExitCode::FAILURE, ExitCode::from)))
}

/// The command line without `--cores N` (or `--cores=N`) and any `--pinned`.
fn without_cores(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut skip_value = false;
    for arg in args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        let text = arg.to_string_lossy();
        match text.as_ref() {
            "--cores" | "--pinned" => skip_value = true,
            t if t.starts_with("--cores=") || t.starts_with("--pinned=") => {}
            _ => out.push(arg),
        }
    }
    out
}

/// Satellites one core keeps up with: at every chunk passing, and at `pass_percent` passing.
pub fn satellites_per_core(drained_per_second: f64, cores: usize, pass_percent: f64) -> (f64, f64) {
    let all = drained_per_second / cores.max(1) as f64 * CHUNK_SECONDS;
    (all, all / (pass_percent / 100.0))
}

/// The pinned run's extra line, with its sum spelled out (nothing when not pinned): `ratio` is
/// the drained end-to-end rate over the bare model's, `bare` the bare model's chunks/s on the
/// same cores.
pub fn print_per_core(args: &CoresArgs, ratio: f64, bare: f64) {
    let (Some(cores), pass_percent) = (args.pinned, args.pass_rate) else { return };
    let drained = ratio * bare;
    let (all, passing) = satellites_per_core(drained, cores, pass_percent);
    let budget = CoreBudget::current();
    println!(
        "satellites per core:        {all:.0} at 100 % pass, {passing:.0} at {pass_percent} % pass   \
         (ratio {ratio:.2} x bare model {bare:.1} = {drained:.1} chunks/s drained end to end; / {} x {CHUNK_SECONDS} s a chunk = {all:.1}; / {:.2} passing = {passing:.1})",
        plural(cores, "core"),
        pass_percent / 100.0
    );
    if budget.cores != cores {
        println!("                            (but this process may use {}: {})", budget.cores, budget.reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_pinned_run_has_the_same_arguments_without_cores() {
        assert_eq!(
            without_cores(args(&["bench", "pipeline", "--cores", "1", "--rounds", "2"])),
            args(&["bench", "pipeline", "--rounds", "2"])
        );
        assert_eq!(
            without_cores(args(&["--config", "x.toml", "bench", "pipeline", "--cores=2", "--pinned", "9"])),
            args(&["--config", "x.toml", "bench", "pipeline"])
        );
    }

    #[test]
    fn satellites_per_core_is_the_drained_rate_per_core_times_three_seconds() {
        // 60 chunks/s on 2 cores: 30 a core, 90 satellites sending one every 3 s; 360 at 25 %.
        assert_eq!(satellites_per_core(60.0, 2, 25.0), (90.0, 360.0));
        assert_eq!(satellites_per_core(10.0, 1, 100.0), (30.0, 30.0));
    }
}
