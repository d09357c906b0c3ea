//! Local probe (not committed): VM steps of the stats store functions on a database copy.
use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use birdhub::store::stats::{Scope, queries, series};
use chrono::NaiveDate;
use rusqlite::Connection;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = &args[1];
    let conn = Connection::open(path).expect("open");
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).expect("qpsg");
    let steps = Arc::new(AtomicU64::new(0));
    let s2 = steps.clone();
    conn.progress_handler(
        1,
        Some(move || {
            s2.fetch_add(1, Ordering::Relaxed);
            false
        }),
    )
    .expect("ph");
    if args.get(2).map(String::as_str) == Some("sql") {
        let sql = std::fs::read_to_string(&args[3]).expect("sql file");
        for stmt_sql in sql.split(";;").filter(|s| !s.trim().is_empty()) {
            let mut plan = conn.prepare(&format!("EXPLAIN QUERY PLAN {stmt_sql}")).expect("eqp");
            let rows: Vec<String> =
                plan.query_map([], |r| r.get::<_, String>(3)).expect("q").map(|r| r.expect("row")).collect();
            drop(plan);
            let before = steps.load(Ordering::Relaxed);
            let mut st = conn.prepare(stmt_sql).expect("prepare");
            let ncol = st.column_count();
            let mut q = st.query([]).expect("query");
            let mut n = 0;
            let mut first = Vec::new();
            while let Some(r) = q.next().expect("next") {
                if n < 3 {
                    let vals: Vec<String> = (0..ncol).map(|i| format!("{:?}", r.get_ref(i).expect("v"))).collect();
                    first.push(vals.join(" | "));
                }
                n += 1;
            }
            println!(
                "---- {} rows, {} steps\n{}\nplan:\n  {}\nfirst: {:?}",
                n,
                steps.load(Ordering::Relaxed) - before,
                stmt_sql.trim(),
                rows.join("\n  "),
                first
            );
        }
        return;
    }
    let tenant: String = conn.query_row("SELECT id FROM tenants", [], |r| r.get(0)).expect("tenant");
    let sats: Vec<String> = conn
        .prepare("SELECT id FROM satellites ORDER BY name")
        .expect("p")
        .query_map([], |r| r.get(0))
        .expect("q")
        .map(|r| r.expect("r"))
        .collect();
    let d = |s: &str| s.parse::<NaiveDate>().expect("date");
    let ranges = [
        ("month", d("2026-10-02"), d("2026-10-31")),
        ("year", d("2025-11-01"), d("2026-10-31")),
        ("odd", d("2025-11-15"), d("2026-11-14")),
    ];
    let filters: [(&str, Option<usize>, bool, u8); 4] =
        [("-", None, false, 0), ("sat", Some(1), false, 0), ("rej", None, true, 0), ("c75", None, false, 15)];
    let which = args.get(2).cloned().unwrap_or_default();
    if which == "species" {
        for code in ["turdus_migratorius", "strix_varia", "setophaga_kirtlandii"] {
            for (rname, from, to) in ranges {
                for band in [0u8, 15] {
                    let scope = Scope {
                        tenant: tenant.parse().expect("t"),
                        satellite: None,
                        from,
                        to,
                        min_band: band,
                        include_rejected: false,
                        species: Some(code.to_owned()),
                    };
                    let m = |name: &str, f: &dyn Fn() -> usize| {
                        let b = steps.load(Ordering::Relaxed);
                        let n = f();
                        println!("{name:<22} {code:<22} {rname:<6} {band:<3} rows {n:>6} steps {:>9}", steps.load(Ordering::Relaxed) - b);
                    };
                    m("by_satellite_species", &|| queries::by_satellite_species(&conn, &scope).expect("q").len());
                    m("verdicts", &|| queries::verdicts(&conn, &scope).expect("q").len());
                    m("species_day_hour", &|| series::species_day_hour(&conn, &scope, code).expect("q").len());
                    m("species_bands", &|| queries::species_bands(&conn, &scope, code).expect("q").len());
                    m("recent", &|| queries::recent(&conn, &scope, code, 10).expect("q").len());
                    m("first_last", &|| queries::first_last(&conn, scope.tenant).expect("q").len());
                    m("places", &|| queries::places(&conn, scope.tenant).expect("q").len());
                }
            }
        }
        return;
    }
    if which == "dump" {
        let scope = Scope {
            tenant: tenant.parse().expect("t"),
            satellite: None,
            from: d("2025-11-15"),
            to: d("2026-11-14"),
            min_band: 0,
            include_rejected: false,
            species: None,
        };
        let mut sql = format!(
            "SELECT satellite_id, species_code, sum(c) AS c FROM {} GROUP BY satellite_id, species_code HAVING sum(c) > 0 ORDER BY satellite_id, species_code",
            scope.counts("satellite_pk, species_pk", birdhub::store::stats::Family::SATELLITE_SPECIES)
        );
        for (k, v) in scope.params() {
            let lit = match v {
                rusqlite::types::Value::Text(t) => format!("'{t}'"),
                rusqlite::types::Value::Integer(i) => i.to_string(),
                _ => "NULL".into(),
            };
            sql = sql
                .replace(&format!("{k} "), &format!("{lit} "))
                .replace(&format!("{k})"), &format!("{lit})"))
                .replace(&format!("{k}\n"), &format!("{lit}\n"));
        }
        println!("{sql}");
        return;
    }
    for (rname, from, to) in ranges {
        for (fname, sat, rej, band) in filters {
            for si in if sat.is_some() { vec![1usize, 5, 9, 13, 17] } else { vec![0] } {
                let scope = Scope {
                    tenant: tenant.parse().expect("t"),
                    satellite: sat.map(|_| sats[si].parse().expect("s")),
                    from,
                    to,
                    min_band: band,
                    include_rejected: rej,
                    species: None,
                };
                let mut m = |name: &str, f: &dyn Fn() -> usize| {
                    if !which.is_empty() && !which.split(',').any(|w| w == name) {
                        return;
                    }
                    let b = steps.load(Ordering::Relaxed);
                    let t = std::time::Instant::now();
                    let n = f();
                    println!(
                        "{name:<22} {rname:<6} {fname:<4}{} rows {n:>6} steps {:>9} {:>7.2} ms",
                        if sat.is_some() { format!("{si:<3}") } else { "   ".into() },
                        steps.load(Ordering::Relaxed) - b,
                        t.elapsed().as_secs_f64() * 1e3
                    );
                };
                m("by_satellite_species", &|| queries::by_satellite_species(&conn, &scope).expect("q").len());
                m("totals", &|| queries::totals(&conn, &scope).map(|t| t.detections as usize).expect("q"));
                m("by_species", &|| queries::by_species(&conn, &scope).expect("q").len());
                m("verdicts", &|| queries::verdicts(&conn, &scope).expect("q").len());
                m("status_totals", &|| queries::status_totals(&conn, &scope).expect("q")[0] as usize);
                m("by_species_month", &|| queries::by_species_month(&conn, &scope).expect("q").len());
                m("detections", &|| queries::detections(&conn, &scope).expect("q") as usize);
                m("by_day", &|| series::by_day(&conn, &scope).expect("q").len());
                m("by_day_hour", &|| series::by_day_hour(&conn, &scope).expect("q").len());
                m("by_hour_satellite", &|| series::by_hour_satellite(&conn, &scope).expect("q").len());
                m("chunks", &|| series::chunks(&conn, &scope).expect("q") as usize);
                m("voters", &|| series::voters(&conn, &scope, 10).expect("q").len());
                m("first_last", &|| queries::first_last(&conn, scope.tenant).expect("q").len());
                m("places", &|| queries::places(&conn, scope.tenant).expect("q").len());
                m("points", &|| {
                    let since: birdhub::time::Timestamp = "2026-09-07T00:00:00Z".parse().expect("ts");
                    queries::points(&conn, &scope, since, 5001).expect("q").len()
                });
            }
        }
    }
}
