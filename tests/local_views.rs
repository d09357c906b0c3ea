//! Local time everywhere a person looks (issue 37), on a hub whose machine zone is UTC: a team
//! whose zone is Europe/Berlin with a satellite in New York and one in Berlin, each given its
//! zone by the zone mover from its coordinates. Alert rule hours are the detecting station's,
//! exports write each station's local date and time, a scheduled export without a zone of its
//! own runs over the team zone's day, and "today" (dashboard, home feed, public page) is the
//! team zone's date.

mod common;

use std::time::Duration;

use birdhub::{
    ids::{SatelliteId, TenantId},
    usecases::alerting,
};
use chrono::{DateTime, Duration as Span, Timelike, Utc};
use common::{Api, TestHub, receiver::Receiver, seed};
use serde_json::{Value, json};

const NEW_YORK: (f64, f64) = (40.7128, -74.0060);
const BERLIN: (f64, f64) = (52.52, 13.405);

struct World {
    hub: TestHub,
    api: Api,
    tenant: TenantId,
    ny: SatelliteId,
    berlin: SatelliteId,
}

/// The team (zone Europe/Berlin, set through the settings API) and its two placed satellites,
/// once the mover has resolved their zones.
async fn world() -> World {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let (status, body) = api.put("/settings/tenant", json!({"time_zone": "Europe/Berlin"})).await;
    assert_eq!(status, 200, "{body}");
    let t = owner.tenant;
    let ny = seed::satellite(&hub, t, "Brooklyn").await;
    let berlin = seed::satellite(&hub, t, "Tiergarten").await;
    seed::place(&hub, t, ny, NEW_YORK.0, NEW_YORK.1).await;
    seed::place(&hub, t, berlin, BERLIN.0, BERLIN.1).await;
    seed::zone_settles(&hub, ny, "America/New_York").await;
    seed::zone_settles(&hub, berlin, "Europe/Berlin").await;
    assert_eq!(hub.state().store.satellite_zone(ny).await.expect("zone"), chrono_tz::America::New_York);
    World { hub, api, tenant: t, ny, berlin }
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Records a robin at `at` the way the inference workers do and runs the team's detection rules
/// over it; returns the titles and messages of the alerts raised.
async fn heard_with_rules(w: &World, sat: SatelliteId, at: &str) -> Vec<String> {
    let chunk = seed::chunk(&w.hub, w.tenant, sat, at).await;
    let new = seed::new_detection((w.tenant, sat, chunk), at, seed::ROBIN, 0.9, None);
    let s = w.hub.state();
    let (now, ctx) = (s.clock.stamp(), s.alerts.clone());
    let raised = s
        .store
        .call(move |c| {
            let stored = birdhub::usecases::detections::record(c, &new, now)?.into_iter().collect::<Vec<_>>();
            alerting::on_detections(c, &stored, &ctx, now)
        })
        .await
        .expect("recorded");
    raised.iter().map(|r| r.alert.message.clone()).collect()
}

#[tokio::test]
async fn an_alert_rules_hours_are_the_local_hours_of_the_detecting_station() {
    let w = world().await;
    let rule = json!({"name": "Dawn chorus", "trigger": "detection", "conditions": {"hours": {"from": 6, "to": 9}}});
    w.api.create("/alert-rules/rules", rule).await;

    // 07:00 UTC is 03:00 in New York: before its dawn.
    assert!(heard_with_rules(&w, w.ny, "2026-05-14T07:00:00.000Z").await.is_empty());
    // 11:00 UTC is 07:00 in New York (EDT).
    let fired = heard_with_rules(&w, w.ny, "2026-05-14T11:00:00.000Z").await;
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert!(fired[0].contains("at 07:00 EDT on 14 May"), "the text is in the station's zone: {}", fired[0]);

    // 07:00 UTC is 09:00 in Berlin (CEST): past the window.
    assert!(heard_with_rules(&w, w.berlin, "2026-05-14T07:00:00.000Z").await.is_empty());
    // 05:00 UTC is 07:00 in Berlin.
    let fired = heard_with_rules(&w, w.berlin, "2026-05-14T05:00:00.000Z").await;
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert!(fired[0].contains("at 07:00 CEST on 14 May"), "{}", fired[0]);

    let (_, alerts) = w.api.get("/alerts").await;
    assert_eq!(alerts["total"], 2, "{alerts}");
}

async fn download(w: &World, path: &str) -> String {
    let token = w.hub.token("owner@example.org").await;
    let resp = reqwest::Client::new().get(w.hub.api(path)).bearer_auth(token).send().await.expect("request");
    assert_eq!(resp.status(), 200, "{path}");
    resp.text().await.expect("body")
}

fn csv_rows(text: &str, headers: bool) -> Vec<Vec<String>> {
    let mut r = csv::ReaderBuilder::new().has_headers(headers).from_reader(text.as_bytes());
    r.records().map(|rec| rec.expect("record").iter().map(str::to_owned).collect()).collect()
}

#[tokio::test]
async fn ebird_and_inaturalist_files_carry_each_stations_local_date_and_time() {
    let w = world().await;
    // 23:30 on 14 May in New York is 03:30 UTC on 15 May.
    seed::heard(&w.hub, w.tenant, w.ny, "2026-05-15T03:30:00.000Z", seed::ROBIN, 0.9).await;
    // 22:30 UTC on 14 May is already 00:30 on 15 May in Berlin: not a 14 May bird there.
    seed::heard(&w.hub, w.tenant, w.berlin, "2026-05-14T22:30:00.000Z", seed::WREN, 0.9).await;

    let ebird = csv_rows(&download(&w, "/export/checklist?from=2026-05-14&to=2026-05-14").await, false);
    assert_eq!(ebird.len(), 1, "one checklist row, the New York robin: {ebird:?}");
    let robin = &ebird[0];
    assert_eq!((robin[0].as_str(), robin[5].as_str()), ("American Robin", "Brooklyn"));
    assert_eq!((robin[8].as_str(), robin[9].as_str()), ("05/14/2026", "23:30"), "New York's date and start");

    let next = csv_rows(&download(&w, "/export/checklist?from=2026-05-15&to=2026-05-15").await, false);
    assert_eq!(next.len(), 1, "{next:?}");
    assert_eq!((next[0][5].as_str(), next[0][8].as_str(), next[0][9].as_str()), ("Tiergarten", "05/15/2026", "00:30"));

    let inat = csv_rows(&download(&w, "/export/observation?from=2026-05-14&to=2026-05-15").await, true);
    let date_of = |taxon: &str| inat.iter().find(|r| r[0] == taxon).map(|r| r[1].clone()).expect(taxon);
    assert_eq!(date_of("Turdus migratorius"), "2026-05-14 23:30 -04:00");
    assert_eq!(date_of("Troglodytes aedon"), "2026-05-15 00:30 +02:00");
}

/// Moves the hub's clock forward to the next 23:30 UTC: already tomorrow in Berlin (00:30 CET
/// or 01:30 CEST), still this evening in New York. Returns the new now.
fn late_evening_utc(hub: &TestHub) -> DateTime<Utc> {
    let now = hub.state().clock.now();
    let since_midnight = i64::from(now.num_seconds_from_midnight());
    let target = 23 * 3600 + 30 * 60;
    let ahead = (target - since_midnight).rem_euclid(24 * 3600);
    hub.state().clock.advance(Duration::from_secs(ahead as u64));
    hub.state().clock.now()
}

#[tokio::test]
async fn a_scheduled_export_without_a_zone_of_its_own_runs_over_the_team_zones_day() {
    let w = world().await;
    let now = late_evening_utc(&w.hub);
    // 20 minutes ago is today in Berlin; two hours ago was yesterday there (but today in UTC).
    seed::heard(&w.hub, w.tenant, w.berlin, &iso(now - Span::minutes(20)), seed::ROBIN, 0.9).await;
    seed::heard(&w.hub, w.tenant, w.berlin, &iso(now - Span::hours(2)), seed::WREN, 0.9).await;
    let rx = Receiver::start(None).await;
    let hook = w
        .api
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "rx", "config": {"url": rx.url("/x")}}))
        .await;
    let made = w
        .api
        .create(
            "/exports/scheduled",
            json!({"name": "Today", "format": "csv", "filters": {"days": 1}, "cron": "0 6 * * *", "channelId": hook["id"]}),
        )
        .await;
    assert_eq!(made["timezone"], "Europe/Berlin", "no zone of its own: the team's");
    let (status, ran) = w.api.post_empty(&format!("/exports/scheduled/{}/run", made["id"].as_str().expect("id"))).await;
    assert_eq!(status, 200, "{ran}");
    let got = rx.wait_for(1, 20).await;
    let text = String::from_utf8_lossy(&got[0].body).into_owned();
    let rows = csv_rows(&text, true);
    assert_eq!(rows.len(), 1, "only Berlin's today: {text}");
    assert!(text.contains("Turdus migratorius") && !text.contains("Troglodytes aedon"), "{text}");
}

#[tokio::test]
async fn today_on_the_dashboard_the_home_feed_and_the_public_page_is_the_team_zones() {
    let w = world().await;
    let now = late_evening_utc(&w.hub);
    let berlin_today = now.with_timezone(&chrono_tz::Europe::Berlin).date_naive();
    assert_ne!(berlin_today, now.date_naive(), "the clock is where Berlin is a day ahead of UTC");
    // Both 20 minutes ago: after midnight in Berlin, the evening before in New York.
    let at = iso(now - Span::minutes(20));
    seed::heard(&w.hub, w.tenant, w.berlin, &at, seed::ROBIN, 0.9).await;
    seed::heard(&w.hub, w.tenant, w.ny, &at, seed::WREN, 0.9).await;

    let (status, dash) = w.api.get("/stats/dashboard").await;
    assert_eq!(status, 200, "{dash}");
    assert_eq!(dash["to"], berlin_today.to_string(), "the range ends on Berlin's today: {dash}");
    assert_eq!(dash["today"]["detections"], 1, "New York's bird is on its own yesterday: {dash}");

    let (team, stamp) = (w.tenant, w.hub.state().clock.stamp());
    let feed = birdhub::usecases::home_feed::snapshot(&w.hub.state().store, team, stamp).await.expect("feed");
    assert_eq!((feed.today.detections, feed.today.species), (1, 1));
    let per_sat = |id: SatelliteId| feed.satellites.iter().find(|s| s.id == id).map(|s| s.detections_today);
    assert_eq!((per_sat(w.berlin), per_sat(w.ny)), (Some(1), Some(0)));

    let (status, _) = w.api.put("/settings/tenant", json!({"public_page_enabled": true})).await;
    assert_eq!(status, 200);
    let (status, public) = w.hub.anon().get(&format!("/public/{}", w.tenant)).await;
    assert_eq!(status, 200, "{public}");
    assert_eq!(public["date"], berlin_today.to_string());
    let species: Vec<&Value> = public["species"].as_array().expect("species").iter().collect();
    assert_eq!(species.len(), 1, "{public}");
    assert_eq!(species[0]["scientificName"], "Turdus migratorius");
}

#[tokio::test]
async fn silence_and_outage_alerts_write_the_satellites_own_time() {
    let w = world().await;
    // Last heard at 07:00 New York time (11:00 UTC), long enough ago for both rules.
    seed::heard(&w.hub, w.tenant, w.ny, "2026-05-14T11:00:00.000Z", seed::ROBIN, 0.9).await;
    let ny = w.ny;
    w.hub.sql(|c| {
        c.execute("UPDATE satellites SET last_seen_at = '2026-05-14T11:00:00.000Z' WHERE id = ?1", [ny]).expect("seen")
    });
    let quiet =
        json!({"name": "Quiet Brooklyn", "trigger": "absence", "conditions": {"minutes": 60, "satelliteIds": [ny]}});
    w.api.create("/alert-rules/rules", quiet).await;
    let s = w.hub.state();
    s.clock.advance(Duration::from_secs(61 * 60));
    assert_eq!(
        birdhub::usecases::alert_watch::watch(&s.store, &s.bus, &s.alerts, s.clock.stamp()).await.expect("pass"),
        1
    );
    birdhub::usecases::monitor::check(&s.store, &s.bus, &s.clock, &s.alerts).await.expect("monitor");

    let (_, alerts) = w.api.get("/alerts").await;
    let message = |kind: &str| {
        alerts["alerts"]
            .as_array()
            .expect("alerts")
            .iter()
            .find(|a| a["type"] == kind)
            .map(|a| a["message"].to_string())
    };
    let silence = message("absence").expect("a silence alert");
    assert!(silence.contains("since 07:00 EDT on 14 May"), "{silence}");
    let outage = message("satellite_offline").expect("an outage alert");
    assert!(outage.contains("since 07:00 EDT on 14 May"), "{outage}");
}

#[tokio::test]
async fn a_trend_rule_judges_yesterday_in_the_team_zone() {
    let w = world().await;
    let now = late_evening_utc(&w.hub);
    // At 23:30 UTC it is already tomorrow in Berlin: the team's yesterday is this UTC date.
    let today_utc = now.date_naive();
    let noon = |d: chrono::NaiveDate| iso(d.and_hms_opt(12, 0, 0).expect("noon").and_utc());
    seed::heard(&w.hub, w.tenant, w.berlin, &noon(today_utc.pred_opt().expect("day")), seed::ROBIN, 0.9).await;
    for _ in 0..3 {
        seed::heard(&w.hub, w.tenant, w.berlin, &noon(today_utc), seed::ROBIN, 0.9).await;
    }
    let busy = json!({"name": "Busy day", "trigger": "trend",
        "conditions": {"metric": "detections", "direction": "rise", "percent": 100, "baselineDays": 1}});
    w.api.create("/alert-rules/rules", busy).await;
    let s = w.hub.state();
    assert_eq!(
        birdhub::usecases::alert_watch::watch(&s.store, &s.bus, &s.alerts, s.clock.stamp()).await.expect("pass"),
        1
    );
    let (_, alerts) = w.api.get("/alerts").await;
    let trend = &alerts["alerts"][0];
    assert_eq!(trend["type"], "trend", "{alerts}");
    assert_eq!(trend["data"]["day"], today_utc.to_string(), "{trend}");
    assert_eq!(trend["data"]["value"], 3.0, "{trend}");
}
