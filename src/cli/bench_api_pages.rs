//! `bench api --suite pages`: the dashboard's server time per page on the benchmark year. Each
//! page renders from in-process `/api` calls (see `web::client`), so its time is the sum of the
//! routes it reads plus the template; the browser's share (charts, scripts) is not in it.

/// The dashboard pages timed, with a label: (label, URLs round-robin, row key "-").
pub fn cases(
    http: &str,
    n: usize,
    ids: &[String],
    codes: &[String],
    sats: &[String],
) -> Vec<(String, Vec<String>, &'static str)> {
    let each = |path: &str| -> Vec<String> { (0..n).map(|_| format!("{http}{path}")).collect() };
    let cycle = |f: &dyn Fn(usize) -> String| -> Vec<String> { (0..n).map(|i| format!("{http}{}", f(i))).collect() };
    vec![
        ("page / (Live)".into(), each("/"), "-"),
        ("page /detections".into(), each("/detections"), "-"),
        (
            "page /detections?species=…".into(),
            cycle(&|i| format!("/detections?species={}", codes[i % codes.len()])),
            "-",
        ),
        ("page /detections/:id".into(), cycle(&|i| format!("/detections/{}", ids[i % ids.len()])), "-"),
        ("page /species".into(), each("/species"), "-"),
        ("page /species/:code".into(), cycle(&|i| format!("/species/{}", codes[i % codes.len()])), "-"),
        ("page /stats".into(), each("/stats"), "-"),
        ("page /satellites".into(), each("/satellites"), "-"),
        ("page /satellites/:id".into(), cycle(&|i| format!("/satellites/{}", sats[i % sats.len()])), "-"),
        ("page /alerts".into(), each("/alerts"), "-"),
        ("page /sessions".into(), each("/sessions"), "-"),
    ]
}
