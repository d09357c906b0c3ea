//! `bench api --suite pages`: the dashboard's server time per page on the benchmark year. Each
//! page renders from in-process `/api` calls (see `web::client`), so its time is the sum of the
//! routes it reads plus the template; the browser's share (charts, scripts) is not in it.

/// The pages that show the model's species catalogue (names in the team's languages, pictures,
/// expected here): without a model they render a placeholder, which would time the wrong thing.
const NEED_MODEL: &[&str] = &["page /species", "page /species/:code"];

/// The dashboard pages timed, with a label: (label, URLs round-robin, row key "-"). Without a
/// model on `hub`, the pages of [`NEED_MODEL`] are left out, with a line that says so.
pub fn cases(
    hub: &crate::app::Hub,
    http: &str,
    n: usize,
    ids: &[String],
    codes: &[String],
    sats: &[String],
) -> Vec<(String, Vec<String>, &'static str)> {
    let each = |path: &str| -> Vec<String> { (0..n).map(|_| format!("{http}{path}")).collect() };
    let cycle = |f: &dyn Fn(usize) -> String| -> Vec<String> { (0..n).map(|i| format!("{http}{}", f(i))).collect() };
    let mut all: Vec<(String, Vec<String>, &'static str)> = vec![
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
    ];
    if hub.state.names.installed().is_empty() {
        println!(
            "pages:     skipped {} (no model installed: they would render without the species catalogue); \
             the other pages are timed without species pictures",
            NEED_MODEL.join(", ")
        );
        all.retain(|(name, ..)| !NEED_MODEL.contains(&name.as_str()));
    }
    all
}

/// The team's public page, turned on for the bench: the page and a species page as a visitor
/// gets them (views reused for [`crate::usecases::public_page::VIEW_TTL`]), and, printed here, the view read afresh each time,
/// which is what the first visitor after the reuse window waits for.
pub async fn public_cases(
    hub: &crate::app::Hub,
    http: &str,
    n: usize,
    team: &str,
    codes: &[String],
) -> anyhow::Result<Vec<(String, Vec<String>, &'static str)>> {
    use crate::{domain::settings::TenantSettings, store, usecases::public_page};
    let scope = team.to_owned();
    let now = hub.state.clock.stamp();
    hub.state
        .store
        .call(move |c| {
            let mut s: TenantSettings = store::settings::load(c, &scope)?;
            s.public_page_enabled = true;
            store::settings::save(c, &scope, &s, now)
        })
        .await?;
    let opened = public_page::open(&hub.state.store, team).await?;
    let ctx = hub.state.public_ctx();
    let mut fresh = Vec::new();
    for _ in 0..20 {
        hub.state.cache.remove(&format!("public:today:{team}")).await;
        let t = std::time::Instant::now();
        let view = public_page::today(ctx, &opened).await?;
        fresh.push(t.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(!view.recent.is_empty(), "the public view shows no detections");
    }
    fresh.sort_by(f64::total_cmp);
    println!(
        "public view read afresh (no reuse): p50 {:.2} ms, max {:.2} ms over {} reads",
        fresh[fresh.len() / 2],
        fresh[fresh.len() - 1],
        fresh.len()
    );
    let each = |path: String| -> Vec<String> { (0..n).map(|_| format!("{http}{path}")).collect() };
    Ok(vec![
        ("page /public/:team (view reused 10 s)".into(), each(format!("/public/{team}")), "-"),
        (
            "page /public/:team/species/:code".into(),
            (0..n).map(|i| format!("{http}/public/{team}/species/{}", codes[i % codes.len()])).collect(),
            "-",
        ),
    ])
}
