//! The daily schedule's rules and the archive path check, without a hub.

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

use super::schedule::{file_name, is_due, last_slot, parse_daily_at, parse_name, prune};

fn at(d: u32, h: u32, m: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 5, d).and_then(|d| d.and_hms_opt(h, m, 0)).expect("date")
}

#[test]
fn names_round_trip_and_other_files_are_not_backups() {
    let t = at(3, 4, 5);
    assert_eq!(file_name(t), "birdhub-backup-20260503-040500.tar.zst");
    assert_eq!(parse_name(&file_name(t)), Some(t));
    for other in ["notes.tar.zst", "birdhub-backup-2026.tar.zst", "birdhub-backup-20260503-040500.tar", "x"] {
        assert_eq!(parse_name(other), None, "{other}");
    }
}

#[test]
fn daily_at_is_hh_mm() {
    assert_eq!(parse_daily_at("03:30"), NaiveTime::from_hms_opt(3, 30, 0));
    for bad in ["", "3:30", "24:00", "12:60", "12-30", "noon"] {
        assert_eq!(parse_daily_at(bad), None, "{bad}");
    }
}

#[test]
fn due_once_per_slot_and_a_missed_one_at_the_next_pass() {
    let three = NaiveTime::from_hms_opt(3, 0, 0).expect("time");
    assert_eq!(last_slot(at(3, 2, 59), three), at(2, 3, 0));
    assert_eq!(last_slot(at(3, 3, 0), three), at(3, 3, 0));
    let made = vec![(at(2, 3, 0), std::path::PathBuf::new())];
    assert!(!is_due(at(3, 2, 59), three, &made), "yesterday's slot is done");
    assert!(is_due(at(3, 3, 0), three, &made), "today's is due at 03:00");
    assert!(is_due(at(5, 12, 0), three, &made), "a missed one is made late");
}

#[test]
fn prune_deletes_only_the_oldest_backups_beyond_keep() {
    let dir = tempfile::tempdir().expect("tempdir");
    for d in 1..=5 {
        std::fs::write(dir.path().join(file_name(at(d, 3, 0))), b"x").expect("write");
    }
    std::fs::write(dir.path().join("notes.tar.zst"), b"mine").expect("write");
    let gone = prune(dir.path(), 2).expect("prune");
    assert_eq!(gone.len(), 3);
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf8"))
        .collect();
    left.sort();
    assert_eq!(left, [file_name(at(4, 3, 0)), file_name(at(5, 3, 0)), "notes.tar.zst".to_owned()]);
}
