//! The cores this process may use, and why: the machine's online CPUs, narrowed by the affinity
//! mask (`taskset`, systemd's `CPUAffinity=`) and by a cgroup CPU quota (`docker --cpus`,
//! systemd's `CPUQuota=`). The inference threads are planned from this budget
//! ([`super::thread_plan`]), so a hub pinned to one core runs one worker on one thread instead of
//! four threads fighting over it.
//!
//! Everything comes from text files, without system calls. The parsers take text, so tests feed
//! them odd samples; [`CoreBudget::read_from`] takes a root directory, so tests give it a fake
//! `/proc` and `/sys`. CPU lists are counted range by range, never CPU by CPU.

use std::{
    path::{Component, Path, PathBuf},
    sync::OnceLock,
};

use serde::Serialize;

/// The cores this process may use.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CoreBudget {
    /// What the threads are planned on: the least of the limits below, at least 1.
    pub cores: usize,
    /// The machine's online CPUs.
    pub machine: usize,
    /// How many CPUs the affinity mask allows (`Cpus_allowed_list`), when it could be read.
    pub affinity: Option<usize>,
    /// That mask as the kernel wrote it (`0-1,4`), to name it in [`Self::reason`].
    pub affinity_list: Option<String>,
    /// The cgroup's CPU quota in CPUs (1.5: one and a half cores' time), when one is set.
    pub quota: Option<f64>,
    /// Why `cores` is what it is, in a sentence ("2 of 4 cores: affinity allows CPUs 0-1").
    pub reason: String,
}

impl CoreBudget {
    /// This process's budget, read once (the limits of a running process rarely change, and the
    /// plan made from them at start does not follow them anyway).
    pub fn current() -> &'static CoreBudget {
        static BUDGET: OnceLock<CoreBudget> = OnceLock::new();
        BUDGET.get_or_init(|| Self::read_from(Path::new("/")))
    }

    /// Reads the budget under `root` (`/` for the real one): `sys/devices/system/cpu/online`,
    /// `proc/self/status`, `proc/self/cgroup`, `proc/self/mountinfo` and the cgroup files.
    pub fn read_from(root: &Path) -> Self {
        let read = |path: &str| std::fs::read_to_string(root.join(path)).ok();
        let machine = read("sys/devices/system/cpu/online")
            .and_then(|t| count_cpu_list(&t))
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let affinity = read("proc/self/status").and_then(|t| affinity_list(&t));
        let cgroups = read("proc/self/cgroup").unwrap_or_default();
        let mounts = match read("proc/self/mountinfo") {
            Some(text) => cgroup_mounts(&text),
            None => default_mounts(),
        };
        Self::from_parts(machine, affinity, cgroup_quota(root, &cgroups, &mounts))
    }

    /// The budget from what was read: `affinity` is the allowed CPUs' count and list.
    pub fn from_parts(machine: usize, affinity: Option<(usize, String)>, quota: Option<f64>) -> Self {
        let machine = machine.max(1);
        let quota = quota.filter(|q| q.is_finite() && *q > 0.0);
        // A quota of 1.5 CPUs lets two threads make progress: round up, but never below one.
        let by_quota = quota.map(|q| (q.ceil() as usize).max(1));
        let by_affinity = affinity.as_ref().map(|(n, _)| (*n).max(1));
        let cores = [Some(machine), by_affinity, by_quota].into_iter().flatten().min().unwrap_or(1);
        let mut limits = Vec::new();
        if let (Some(n), Some((_, list))) = (by_affinity, &affinity)
            && n < machine
        {
            limits.push(format!("affinity allows CPUs {list}"));
        }
        if let (Some(n), Some(q)) = (by_quota, quota)
            && n < machine
        {
            let q = (q * 100.0).round() / 100.0;
            let rounded = if q.fract() == 0.0 { String::new() } else { format!(", rounded up to {n}") };
            limits.push(format!("cgroup quota {q} CPU{rounded}"));
        }
        let reason = match limits.is_empty() {
            true => format!("{}: the whole machine", plural(cores, "core")),
            false => format!("{cores} of {}: {}", plural(machine, "core"), limits.join("; ")),
        };
        Self { cores, machine, affinity: by_affinity, affinity_list: affinity.map(|(_, l)| l), quota, reason }
    }
}

/// `1 core`, `2 cores`.
pub fn plural(n: usize, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

/// How many CPUs a kernel CPU list names (`0-1,4,7-8` is 5); `None` for empty or malformed text.
/// Overlapping ranges count once.
pub fn count_cpu_list(text: &str) -> Option<usize> {
    let count: u64 = cpu_ranges(text)?.iter().map(|(lo, hi)| hi - lo + 1).sum();
    Some(usize::try_from(count).unwrap_or(usize::MAX))
}

/// Whether a CPU list allows every one of CPUs `0..n` (what `taskset -c 0-(n-1)` asks for).
pub fn allows_first(text: &str, n: usize) -> bool {
    let first = cpu_ranges(text).and_then(|r| r.first().copied());
    n == 0 || first.is_some_and(|(lo, hi)| lo == 0 && hi >= n as u64 - 1)
}

/// A CPU list's ranges, sorted and merged where they touch or overlap.
fn cpu_ranges(text: &str) -> Option<Vec<(u64, u64)>> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut ranges = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        // CPU numbers are 32-bit in the kernel; anything longer is not a CPU list.
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
            None => {
                let n = part.parse::<u32>().ok()?;
                (n, n)
            }
        };
        if lo > hi {
            return None;
        }
        ranges.push((u64::from(lo), u64::from(hi)));
    }
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match merged.last_mut() {
            Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    Some(merged)
}

/// The `Cpus_allowed_list:` of `/proc/self/status`: how many CPUs, and the list itself.
pub fn affinity_list(status: &str) -> Option<(usize, String)> {
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?.trim();
    count_cpu_list(list).map(|n| (n, list.to_owned()))
}

/// A cgroup v2 `cpu.max` (`150000 100000`) in CPUs; `None` for `max` (no limit) or nonsense.
pub fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut fields = text.split_whitespace();
    let (quota, period) = (fields.next()?, fields.next()?);
    ratio(quota, period)
}

/// A cgroup v1 `cpu.cfs_quota_us` over `cpu.cfs_period_us` in CPUs; `None` for -1 (no limit).
pub fn parse_cfs(quota: &str, period: &str) -> Option<f64> {
    ratio(quota.trim(), period.trim())
}

fn ratio(quota: &str, period: &str) -> Option<f64> {
    let (quota, period) = (quota.parse::<i64>().ok()?, period.parse::<i64>().ok()?);
    (quota > 0 && period > 0).then(|| quota as f64 / period as f64)
}

/// Which cgroup hierarchy a mount holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hierarchy {
    /// The unified hierarchy (`cpu.max`).
    V2,
    /// A v1 hierarchy with the `cpu` controller (`cpu.cfs_quota_us`).
    V1Cpu,
}

/// A cgroup file system mounted somewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    hierarchy: Hierarchy,
    /// The cgroup the mount shows as its top (`/` unless a container sees only its own).
    root: String,
    /// Where it is mounted (`/sys/fs/cgroup`).
    point: String,
}

/// The cgroup mounts of a `/proc/self/mountinfo`.
fn cgroup_mounts(mountinfo: &str) -> Vec<Mount> {
    let mount = |line: &str| {
        let (left, right) = line.split_once(" - ")?;
        let fields: Vec<&str> = left.split(' ').collect();
        let (root, point) = (fields.get(3)?, fields.get(4)?);
        let mut right = right.split(' ');
        let (fstype, _source, options) = (right.next()?, right.next(), right.next().unwrap_or(""));
        let hierarchy = match fstype {
            "cgroup2" => Hierarchy::V2,
            "cgroup" if options.split(',').any(|o| o == "cpu") => Hierarchy::V1Cpu,
            _ => return None,
        };
        Some(Mount { hierarchy, root: (*root).to_owned(), point: (*point).to_owned() })
    };
    mountinfo.lines().filter_map(mount).collect()
}

/// Where the cgroup file systems usually are, when `/proc/self/mountinfo` cannot be read.
fn default_mounts() -> Vec<Mount> {
    let at = |hierarchy, point: &str| Mount { hierarchy, root: "/".into(), point: point.into() };
    vec![at(Hierarchy::V2, "/sys/fs/cgroup"), at(Hierarchy::V1Cpu, "/sys/fs/cgroup/cpu")]
}

/// The process's cgroup in `hierarchy`, from `/proc/self/cgroup` (`0::/user.slice`,
/// `4:cpu,cpuacct:/docker/abc`).
fn membership(cgroups: &str, hierarchy: Hierarchy) -> Option<&str> {
    cgroups.lines().find_map(|line| {
        let mut f = line.splitn(3, ':');
        let (id, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let matches = match hierarchy {
            Hierarchy::V2 => id == "0" && controllers.is_empty(),
            Hierarchy::V1Cpu => controllers.split(',').any(|c| c == "cpu"),
        };
        matches.then_some(path.trim())
    })
}

/// The tightest quota on the way from the process's cgroup up to the top of each mounted
/// hierarchy: a limit set on a parent holds for every cgroup below it.
fn cgroup_quota(root: &Path, cgroups: &str, mounts: &[Mount]) -> Option<f64> {
    let mut least: Option<f64> = None;
    for mount in mounts {
        let Some(path) = membership(cgroups, mount.hierarchy) else { continue };
        let top = root.join(mount.point.trim_start_matches('/'));
        let mut dir = top.join(relative(path, &mount.root));
        loop {
            if let Some(q) = quota_in(&dir, mount.hierarchy) {
                least = Some(least.map_or(q, |l| l.min(q)));
            }
            if dir == top || !dir.pop() {
                break;
            }
        }
    }
    least
}

/// `path` below the mount's own top; only plain names, so the walk up cannot leave the mount.
fn relative(path: &str, mount_root: &str) -> PathBuf {
    let inside = match mount_root {
        "/" => path,
        r => path.strip_prefix(r).filter(|rest| rest.is_empty() || rest.starts_with('/')).unwrap_or(""),
    };
    let plain = Path::new(inside.trim_start_matches('/')).components().all(|c| matches!(c, Component::Normal(_)));
    if plain { PathBuf::from(inside.trim_start_matches('/')) } else { PathBuf::new() }
}

fn quota_in(dir: &Path, hierarchy: Hierarchy) -> Option<f64> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    match hierarchy {
        Hierarchy::V2 => parse_cpu_max(&read("cpu.max")?),
        Hierarchy::V1Cpu => parse_cfs(&read("cpu.cfs_quota_us")?, &read("cpu.cfs_period_us")?),
    }
}

#[cfg(test)]
mod tests;
