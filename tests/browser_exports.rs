//! The Exports page and two Stats details in a real browser (headless chromium), as issue 36
//! found them: a range that cannot be exported keeps the form and says why; scheduled exports
//! show their next run as a time in the viewer's format, can be edited and run now; the
//! migration grid's month headers are months; stations at one place keep readable names on the
//! map. Every page fits a 360 px phone.

mod common;

use common::{PASSWORD, browser::Browser, receiver::Receiver, seed};
use serde_json::json;

const FITS: &str = "return document.documentElement.scrollWidth <= window.innerWidth;";

fn ago(hub: &common::TestHub, hours: i64) -> String {
    (hub.state().clock.now() - chrono::Duration::hours(hours)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_range_keeps_the_form_and_scheduled_exports_are_edited_and_run_now() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let sat = seed::satellite(&hub, owner.tenant, "Garden").await;
    seed::heard(&hub, owner.tenant, sat, &ago(&hub, 2), seed::ROBIN, 0.9).await;
    let (status, _) = api.put("/auth/me/preferences", json!({"timeFormat": "12h"})).await;
    assert_eq!(status, 200);
    let rx = Receiver::start(None).await;
    let hook = api
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "Archive", "config": {"url": rx.url("/x")}}))
        .await;
    let made = api
        .create(
            "/exports/scheduled",
            json!({"name": "Weekly list", "format": "csv", "filters": {"days": 7}, "cron": "30 15 * * 1",
                "timezone": "UTC", "channelId": hook["id"]}),
        )
        .await;
    let id = made["id"].as_str().expect("id").to_owned();

    let b = Browser::start(hub.http_addr.port(), "exports").await;
    b.sign_in(&owner.email, PASSWORD, None).await;

    // The first day after the last: the form stays, filled in, with the reason; no links.
    b.goto("/exports?from=2026-05-10&to=2026-05-01").await;
    assert!(b.text("#range-error").await.contains("after the last day"), "the reason is on the page");
    assert_eq!(b.js("return document.getElementById('export-from').value").await, "2026-05-10");
    assert_eq!(b.js("return document.getElementById('export-to').value").await, "2026-05-01");
    assert!(!b.has(".export-links").await, "no download links for a range that cannot be exported");
    assert!(b.has("nav.tabs").await, "the navigation is still there");
    // A first day in the future is refused the same way.
    b.goto("/exports?from=2999-01-01").await;
    assert!(b.text("#range-error").await.contains("in the future"));
    b.goto("/exports").await;
    assert!(b.has(".export-links").await);

    // The next run: a time in the viewer's 12-hour format, never the stored text.
    let next = b.text(&format!("#sched-{id} .next-run")).await;
    assert!(next.contains("PM") && next.contains("3:30"), "next run in 12-hour time: {next:?}");
    assert!(!next.contains("+00:00") && !next.contains("15:30"), "{next:?}");
    assert_eq!(b.js("return document.getElementById('sched-days').max").await, "3660", "the server's limit");
    b.shot("exports").await;
    b.client.set_window_size(360, 800).await.expect("phone width");
    assert_eq!(b.js(FITS).await.as_bool(), Some(true), "the page fits a 360 px phone");
    b.client.set_window_size(1280, 900).await.expect("desktop width");

    // Edit: the form fills in; saving changes the schedule.
    b.click(&format!("#sched-{id} [data-edit-sched]")).await;
    assert_eq!(b.js("return document.getElementById('sched-name').value").await, "Weekly list");
    assert_eq!(b.text("#sched-submit").await, "Save changes");
    b.fill("#sched-name", "Weekly robins").await;
    b.js("document.getElementById('sched-days').value = '14'").await;
    b.click("#sched-submit").await;
    assert!(
        b.wait_until(
            &format!(
                "var r=document.getElementById('sched-{id}'); return !!r && r.textContent.includes('Weekly robins')"
            ),
            10
        )
        .await
    );
    let (_, after) = api.get(&format!("/exports/scheduled/{id}")).await;
    assert_eq!(after["name"], "Weekly robins");
    assert_eq!(after["filters"]["days"], 14);
    assert_eq!(api.get("/exports/scheduled").await.1["total"], 1, "edited, not added");

    // Run now: the file goes to the channel at once; the schedule keeps its next run.
    b.js("window.confirm = () => true").await;
    b.click(&format!("#sched-{id} [data-run-sched]")).await;
    let got = rx.wait_for(1, 20).await;
    assert_eq!(got.len(), 1, "the export was sent now");
    assert!(String::from_utf8_lossy(&got[0].body).contains("Turdus migratorius"));
    assert!(b.wait_until("return document.querySelectorAll('.toast.ok').length > 0", 10).await, "it says so");
    let (_, ran) = api.get(&format!("/exports/scheduled/{id}")).await;
    assert!(ran["lastRunAt"].is_string(), "{ran}");
    assert_eq!(ran["nextRuns"], after["nextRuns"], "its schedule stays");
    b.assert_no_js_errors().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn month_headers_read_as_months_and_names_at_one_place_do_not_overlap() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let t = owner.tenant;
    let garden = seed::satellite(&hub, t, "Garden").await;
    let feeder = seed::satellite(&hub, t, "Garden feeder").await;
    for s in [garden, feeder] {
        seed::place(&hub, t, s, 51.501, -0.142).await;
    }
    seed::heard(&hub, t, garden, &ago(&hub, 2), seed::ROBIN, 0.9).await;
    seed::heard(&hub, t, feeder, &ago(&hub, 40 * 24), seed::ROBIN, 0.9).await;

    let b = Browser::start(hub.http_addr.port(), "stats-labels").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto("/stats?days=90").await;
    assert!(b.wait_until("return document.querySelectorAll('.stats-part .loading').length === 0", 15).await);

    let heads = b
        .js("return Array.from(document.querySelectorAll('table.migration thead th')).map(t => t.textContent.trim())")
        .await;
    let heads: Vec<String> = serde_json::from_value(heads).expect("headers");
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month_heads: Vec<&String> = heads.iter().filter(|h| months.iter().any(|m| h.starts_with(m))).collect();
    assert!(month_heads.len() >= 2, "month columns are named by month: {heads:?}");
    assert!(month_heads[0].contains("20"), "the first column carries its year: {heads:?}");
    assert!(!heads.iter().any(|h| h.len() == 5 && h.as_bytes()[2] == b'-'), "no '26-10' headers: {heads:?}");

    // Both names are drawn, and their boxes do not overlap.
    let overlap = b
        .js("var t=Array.from(document.querySelectorAll('#map .map-marker text')).map(e=>e.getBBox());\
             if (t.length !== 2) return 'names: ' + t.length;\
             var a=t[0], c=t[1];\
             return (a.x < c.x + c.width && c.x < a.x + a.width && a.y < c.y + c.height && c.y < a.y + a.height) ? 'overlap' : 'apart';")
        .await;
    assert_eq!(overlap, "apart");
    b.shot("stats-one-place").await;
    b.client.set_window_size(360, 800).await.expect("phone width");
    assert_eq!(b.js(FITS).await.as_bool(), Some(true), "stats fit a 360 px phone");
    b.assert_no_js_errors().await;
    b.close().await;
}
