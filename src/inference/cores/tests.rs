use std::path::Path;

use proptest::prelude::*;

use super::*;

#[test]
fn cpu_lists_are_counted_range_by_range() {
    let cases: &[(&str, Option<usize>)] = &[
        ("0", Some(1)),
        ("0-1", Some(2)),
        ("0-1\n", Some(2)),
        ("0-1,4,7-8", Some(5)),
        ("3", Some(1)),
        ("0-3,2-5", Some(6)), // overlapping ranges count once
        ("4,0-7", Some(8)),   // out of order
        ("0-99999999", Some(100_000_000)),
        ("0-4294967295", Some(1 << 32)),
        ("", None),
        ("  \n", None),
        ("garbage", None),
        ("0-", None),
        ("-1", None),
        ("5-3", None),
        ("0,,1", None),
        ("0-1-2", None),
        ("0-99999999999999999999", None),
        ("ff", None),
    ];
    for (text, want) in cases {
        assert_eq!(count_cpu_list(text), *want, "{text:?}");
    }
}

#[test]
fn pinning_to_the_first_cpus_needs_all_of_them_allowed() {
    assert!(allows_first("0-3", 4));
    assert!(allows_first("0,1,2-5", 3));
    assert!(allows_first("2,0-1", 3));
    assert!(!allows_first("0-3", 5));
    assert!(!allows_first("1-3", 1));
    assert!(!allows_first("0,2", 2));
    assert!(!allows_first("garbage", 1));
    assert!(allows_first("", 0));
}

#[test]
fn the_affinity_mask_comes_from_cpus_allowed_list() {
    let status = "Name:\tbirdhub\nCpus_allowed:\t13\nCpus_allowed_list:\t0-1,4\nMems_allowed:\t1\n";
    assert_eq!(affinity_list(status), Some((3, "0-1,4".into())));
    assert_eq!(affinity_list("Name:\tbirdhub\n"), None);
    assert_eq!(affinity_list("Cpus_allowed_list:\tnonsense\n"), None);
    assert_eq!(affinity_list(""), None);
}

#[test]
fn cgroup_quotas_read_as_cpus() {
    assert_eq!(parse_cpu_max("max 100000\n"), None);
    assert_eq!(parse_cpu_max("150000 100000\n"), Some(1.5));
    assert_eq!(parse_cpu_max("50000 100000"), Some(0.5));
    assert_eq!(parse_cpu_max("-1 100000"), None);
    assert_eq!(parse_cpu_max("100000 0"), None);
    assert_eq!(parse_cpu_max("100000"), None);
    assert_eq!(parse_cpu_max(""), None);
    assert_eq!(parse_cpu_max("lots of cpu"), None);
    assert_eq!(parse_cfs("-1\n", "100000\n"), None);
    assert_eq!(parse_cfs("200000\n", "100000\n"), Some(2.0));
    assert_eq!(parse_cfs("50000", "0"), None);
    assert_eq!(parse_cfs("", ""), None);
}

#[test]
fn the_budget_is_the_tightest_limit_and_says_which() {
    let b = CoreBudget::from_parts(4, None, None);
    assert_eq!((b.cores, b.reason.as_str()), (4, "4 cores: the whole machine"));
    let b = CoreBudget::from_parts(4, Some((2, "0-1".into())), None);
    assert_eq!((b.cores, b.reason.as_str()), (2, "2 of 4 cores: affinity allows CPUs 0-1"));
    let b = CoreBudget::from_parts(4, None, Some(0.5));
    assert_eq!((b.cores, b.reason.as_str()), (1, "1 of 4 cores: cgroup quota 0.5 CPU, rounded up to 1"));
    let b = CoreBudget::from_parts(4, None, Some(1.5));
    assert_eq!((b.cores, b.reason.as_str()), (2, "2 of 4 cores: cgroup quota 1.5 CPU, rounded up to 2"));
    let b = CoreBudget::from_parts(8, Some((4, "0-3".into())), Some(2.0));
    assert_eq!(b.cores, 2);
    assert_eq!(b.reason, "2 of 8 cores: affinity allows CPUs 0-3; cgroup quota 2 CPU");
    // Limits wider than the machine change nothing and are not named.
    let b = CoreBudget::from_parts(2, Some((64, "0-63".into())), Some(16.0));
    assert_eq!((b.cores, b.reason.as_str()), (2, "2 cores: the whole machine"));
    let b = CoreBudget::from_parts(1, None, None);
    assert_eq!((b.cores, b.reason.as_str()), (1, "1 core: the whole machine"));
    // Nonsense never makes a budget of zero.
    for b in [
        CoreBudget::from_parts(0, None, None),
        CoreBudget::from_parts(4, Some((0, String::new())), None),
        CoreBudget::from_parts(4, None, Some(0.0)),
        CoreBudget::from_parts(4, None, Some(f64::NAN)),
        CoreBudget::from_parts(4, None, Some(-1.0)),
    ] {
        assert!(b.cores >= 1, "{b:?}");
    }
}

/// Writes `files` (path under `root`, contents).
fn fake(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        std::fs::write(path, text).expect("write");
    }
}

const V2_MOUNT: &str = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";

#[test]
fn a_fake_proc_pinned_to_one_cpu_gives_one_core() {
    let root = tempfile::tempdir().expect("tempdir");
    fake(
        root.path(),
        &[
            ("sys/devices/system/cpu/online", "0-3\n"),
            ("proc/self/status", "Name:\tbirdhub\nCpus_allowed_list:\t2\n"),
            ("proc/self/cgroup", "0::/system.slice/birdhub.service\n"),
            ("proc/self/mountinfo", V2_MOUNT),
            ("sys/fs/cgroup/system.slice/birdhub.service/cpu.max", "max 100000\n"),
        ],
    );
    let b = CoreBudget::read_from(root.path());
    assert_eq!((b.cores, b.machine, b.affinity, b.quota), (1, 4, Some(1), None));
    assert_eq!(b.reason, "1 of 4 cores: affinity allows CPUs 2");
}

#[test]
fn a_quota_set_on_a_parent_cgroup_holds_below_it() {
    let root = tempfile::tempdir().expect("tempdir");
    fake(
        root.path(),
        &[
            ("sys/devices/system/cpu/online", "0-7\n"),
            ("proc/self/status", "Cpus_allowed_list:\t0-7\n"),
            ("proc/self/cgroup", "0::/birdhub.slice/hub.service\n"),
            ("proc/self/mountinfo", V2_MOUNT),
            ("sys/fs/cgroup/birdhub.slice/cpu.max", "150000 100000\n"),
            ("sys/fs/cgroup/birdhub.slice/hub.service/cpu.max", "max 100000\n"),
            ("sys/fs/cgroup/cpu.max", "garbage"),
        ],
    );
    let b = CoreBudget::read_from(root.path());
    assert_eq!((b.cores, b.quota), (2, Some(1.5)));
    assert_eq!(b.reason, "2 of 8 cores: cgroup quota 1.5 CPU, rounded up to 2");
}

#[test]
fn cgroup_v1_quotas_and_container_roots_are_read() {
    let root = tempfile::tempdir().expect("tempdir");
    // Docker on cgroup v1 without a cgroup namespace: the mount's top is the container's cgroup.
    let mounts = "40 30 0:35 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n\
                  41 30 0:36 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n";
    fake(
        root.path(),
        &[
            ("sys/devices/system/cpu/online", "0-3\n"),
            ("proc/self/cgroup", "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n"),
            ("proc/self/mountinfo", mounts),
            ("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "50000\n"),
            ("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n"),
            ("sys/fs/cgroup/memory/cpu.cfs_quota_us", "1000\n"),
        ],
    );
    let b = CoreBudget::read_from(root.path());
    assert_eq!((b.cores, b.quota, b.affinity), (1, Some(0.5), None));
}

#[test]
fn hostile_cgroup_paths_never_leave_the_mount() {
    let root = tempfile::tempdir().expect("tempdir");
    fake(
        root.path(),
        &[
            ("sys/devices/system/cpu/online", "0-3\n"),
            ("proc/self/cgroup", "0::/../../../../etc\n"),
            ("proc/self/mountinfo", V2_MOUNT),
            ("etc/cpu.max", "10000 100000\n"),
        ],
    );
    let b = CoreBudget::read_from(root.path());
    assert_eq!((b.cores, b.quota), (4, None));
}

#[test]
fn an_empty_proc_falls_back_to_what_the_standard_library_sees() {
    let root = tempfile::tempdir().expect("tempdir");
    let b = CoreBudget::read_from(root.path());
    assert_eq!(b.cores, std::thread::available_parallelism().map_or(1, |n| n.get()));
    assert_eq!((b.affinity, b.quota), (None, None));
}

#[test]
fn the_real_budget_is_within_the_machine() {
    let b = CoreBudget::current();
    assert!(b.cores >= 1 && b.cores <= b.machine, "{b:?}");
}

proptest! {
    #[test]
    fn any_text_is_counted_or_refused_without_panicking(text in ".{0,64}") {
        let _ = count_cpu_list(&text);
        let _ = parse_cpu_max(&text);
        let _ = affinity_list(&text);
    }

    #[test]
    fn disjoint_ranges_count_their_sizes(sizes in proptest::collection::vec((0u32..5, 1u32..1000), 1..20)) {
        let (mut text, mut start, mut total) = (Vec::new(), 0u32, 0usize);
        for (gap, len) in sizes {
            let lo = start + gap;
            let hi = lo + len - 1;
            text.push(if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") });
            total += len as usize;
            start = hi + 2;
        }
        prop_assert_eq!(count_cpu_list(&text.join(",")), Some(total));
    }
}
