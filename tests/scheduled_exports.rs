//! Scheduled exports (SPEC 2.17, 4.7): managing them by role, the next run times in a zone,
//! refusing bad input without writing a row, delivering the file by mail (an attachment, read
//! back as CSV) and by a signed webhook, running a schedule missed while the hub was down once,
//! and recording a failed delivery or render on the schedule. Runs happen on the hub's moved
//! clock, through the same pass the scheduler task makes.

mod common;

use std::time::Duration;

use base64::Engine;
use birdhub::domain::Role;
use chrono::{DateTime, Datelike, Duration as Span, FixedOffset, TimeZone, Timelike, Utc};
use common::{TestHub, assert_error, receiver::Receiver, seed};
use serde_json::{Value, json};

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// One scheduler pass now, as `jobs::scheduled_exports` makes it.
async fn pass(hub: &TestHub) -> usize {
    let s = hub.state();
    birdhub::usecases::scheduled_exports::run_due(&birdhub::jobs::scheduled_exports::env(s), s.clock.stamp())
        .await
        .expect("scheduler pass")
}

/// Polls a schedule until its `lastStatus` is `want` (at most 20 s).
async fn status_becomes(api: &common::Api, id: &str, want: &str) -> Value {
    for _ in 0..200 {
        let (_, s) = api.get(&format!("/exports/scheduled/{id}")).await;
        if s["lastStatus"] == want {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, s) = api.get(&format!("/exports/scheduled/{id}")).await;
    panic!("lastStatus never became {want}: {s}");
}

fn count_rows(hub: &TestHub) -> i64 {
    hub.sql(|c| c.query_row("SELECT count(*) FROM scheduled_exports", [], |r| r.get(0)).expect("count"))
}

#[tokio::test]
async fn viewers_read_admins_write_members_cannot() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let member = hub.member_of("member@example.org", owner.tenant, Role::Member).await;
    let viewer = hub.member_of("viewer@example.org", owner.tenant, Role::Viewer).await;
    let (member, viewer) = (hub.login(&member.email).await, hub.login(&viewer.email).await);
    let rx = Receiver::start(None).await;
    let hook = admin
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "rx", "config": {"url": rx.url("/x")}}))
        .await;
    let body = json!({"name": "Weekly robins", "format": "csv", "filters": {"days": 7}, "cron": "0 6 * * 1",
        "timezone": "Europe/Berlin", "channelId": hook["id"]});

    assert_error(&viewer.post("/exports/scheduled", body.clone()).await, 403, "insufficient_role");
    assert_error(&member.post("/exports/scheduled", body.clone()).await, 403, "insufficient_role");
    let made = admin.create("/exports/scheduled", body).await;
    let id = made["id"].as_str().expect("id").to_owned();
    assert_eq!(made["format"], "csv");
    assert_eq!(made["filters"], json!({"days": 7}));
    assert_eq!(made["enabled"], true);
    assert_eq!(made["nextRuns"].as_array().map(Vec::len), Some(3));
    assert!(made["lastStatus"].is_null() && made["lastRunAt"].is_null() && made["createdAt"].is_string(), "{made}");

    let (status, list) = viewer.get("/exports/scheduled").await;
    assert_eq!(status, 200);
    assert_eq!(list["total"], 1);
    assert_eq!(list["scheduledExports"][0]["name"], "Weekly robins");
    let (status, one) = viewer.get(&format!("/exports/scheduled/{id}")).await;
    assert_eq!((status.as_u16(), &one["id"]), (200, &made["id"]));

    let path = format!("/exports/scheduled/{id}");
    assert_error(&member.put(&path, json!({"name": "mine"})).await, 403, "insufficient_role");
    assert_error(&viewer.delete(&path).await, 403, "insufficient_role");
    let (status, changed) = admin.put(&path, json!({"name": "Daily robins", "cron": "15 7 * * *"})).await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!((changed["name"].as_str(), changed["cron"].as_str()), (Some("Daily robins"), Some("15 7 * * *")));
    assert_eq!(changed["format"], "csv", "fields left out keep their values");
    assert!(changed["nextRuns"][0].as_str().is_some_and(|t| t.contains("T07:15:00+0")), "{changed}");
    let (_, off) = admin.put(&path, json!({"enabled": false})).await;
    assert_eq!(off["nextRuns"], json!([]), "a disabled schedule has no coming runs");

    let (status, _) = admin.delete(&path).await;
    assert_eq!(status, 204);
    assert_error(&viewer.get(&path).await, 404, "scheduled_export_not_found");
    assert_error(&admin.put(&path, json!({"name": "x"})).await, 404, "scheduled_export_not_found");
}

#[tokio::test]
async fn next_runs_are_the_coming_times_in_the_schedules_zone() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let mail = api
        .create("/alert-rules/channels", json!({"type": "email", "name": "me", "config": {"to": ["me@example.org"]}}))
        .await;
    let made = api
        .create(
            "/exports/scheduled",
            json!({"name": "Monday", "format": "json", "cron": "30 7 * * MON", "timezone": "America/New_York",
            "channelId": mail["id"]}),
        )
        .await;
    let runs: Vec<DateTime<FixedOffset>> = made["nextRuns"]
        .as_array()
        .expect("nextRuns")
        .iter()
        .map(|t| DateTime::parse_from_rfc3339(t.as_str().expect("text")).expect("ISO-8601 with offset"))
        .collect();
    // Worked out here from the zone alone: the next three Mondays at 07:30 in New York.
    let ny = chrono_tz::America::New_York;
    let now = hub.state().clock.now();
    let mut want = Vec::new();
    let mut day = now.with_timezone(&ny).date_naive();
    while want.len() < 3 {
        if day.weekday() == chrono::Weekday::Mon {
            let t = ny.from_local_datetime(&day.and_hms_opt(7, 30, 0).expect("time")).single().expect("one time");
            if t.with_timezone(&Utc) > now {
                want.push(t.fixed_offset());
            }
        }
        day = day.succ_opt().expect("day");
    }
    assert_eq!(runs, want);
    for t in &runs {
        assert!(matches!(t.offset().local_minus_utc(), -18000 | -14400), "New York's offset, not UTC: {t}");
        assert_eq!((t.hour(), t.minute()), (7, 30));
    }
}

#[tokio::test]
async fn bad_input_is_refused_and_nothing_is_written() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let other = hub.user("other@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let theirs = hub.login(&other.email).await;
    let rx = Receiver::start(None).await;
    let hook = api
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "rx", "config": {"url": rx.url("/x")}}))
        .await;
    let foreign = theirs
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "theirs", "config": {"url": rx.url("/y")}}))
        .await;
    let chat = api
        .create("/alert-rules/channels", json!({"type": "chat_block", "name": "chat", "config": {"url": rx.url("/c")}}))
        .await;
    let base = json!({"name": "n", "format": "csv", "cron": "0 6 * * *", "timezone": "UTC", "channelId": hook["id"]});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    let cases = [
        (with("format", json!("xml")), "unknown_format"),
        (with("cron", json!("61 * * * *")), "invalid_cron"),
        (with("cron", json!("0 0 6 * * 1")), "invalid_cron"),
        (with("cron", json!("0 0 31 2 *")), "invalid_cron"),
        (with("timezone", json!("Mars/Olympus_Mons")), "invalid_timezone"),
        (with("channelId", foreign["id"].clone()), "unknown_channel"),
        (with("channelId", json!("00000000-0000-4000-8000-000000000000")), "unknown_channel"),
        (with("channelId", chat["id"].clone()), "unsupported_channel_type"),
        (with("filters", json!({"minConfidence": 2})), "invalid_filters"),
        (with("filters", json!({"minConfidense": 0.5})), "invalid_filters"),
        (with("filters", json!({"days": "seven"})), "invalid_filters"),
        (with("filters", json!("days=7")), "invalid_filters"),
        (with("name", json!("")), "invalid_scheduled_export"),
    ];
    for (body, code) in cases {
        let got = api.post("/exports/scheduled", body.clone()).await;
        assert_error(&got, 422, code);
        assert!(got.1["message"].as_str().is_some_and(|m| m.len() > 10), "a helpful message for {body}: {}", got.1);
    }
    let six = api.post("/exports/scheduled", with("cron", json!("0 0 6 * * 1"))).await;
    assert!(six.1["message"].as_str().is_some_and(|m| m.contains("five fields")), "{}", six.1);
    let range = api.post("/exports/scheduled", with("cron", json!("61 * * * *"))).await;
    assert!(range.1["message"].as_str().is_some_and(|m| m.contains("minute") && m.contains("0-59")), "{}", range.1);

    let raw = reqwest::Client::new()
        .post(hub.api("/exports/scheduled"))
        .bearer_auth(hub.token(&owner.email).await)
        .header("content-type", "application/json")
        .body("{\"name\": \"n\", \"format\": ")
        .send()
        .await
        .expect("send");
    assert_eq!(raw.status(), 400);
    assert_eq!(raw.json::<Value>().await.expect("json")["code"], "invalid_json");

    // Editing into a bad state is refused the same way and leaves the row as it was.
    let made = api.create("/exports/scheduled", base.clone()).await;
    let path = format!("/exports/scheduled/{}", made["id"].as_str().expect("id"));
    assert_error(&api.put(&path, json!({"cron": "61 * * * *"})).await, 422, "invalid_cron");
    assert_error(&api.put(&path, json!({"channelId": foreign["id"]})).await, 422, "unknown_channel");
    let (_, kept) = api.get(&path).await;
    assert_eq!((kept["cron"].as_str(), &kept["channelId"]), (Some("0 6 * * *"), &hook["id"]));
    assert_eq!(count_rows(&hub), 1, "only the one good schedule was written");
    // Another team cannot see it.
    assert_error(&theirs.get(&path).await, 404, "scheduled_export_not_found");
}

/// The attachment of a MIME mail as the sink kept it: its file name (`filename=` or RFC 2231's
/// `filename*0=`) and decoded bytes.
fn attachment(message: &str) -> (String, Vec<u8>) {
    let part = message
        .split("\n--")
        .find(|p| p.contains("Content-Disposition: attachment"))
        .unwrap_or_else(|| panic!("no attachment in {message}"));
    let (headers, body) = part.split_once("\n\n").expect("part headers");
    let name = headers
        .split("filename")
        .nth(1)
        .and_then(|s| s.split_once('='))
        .map(|(_, s)| s.trim_start_matches('"'))
        .and_then(|s| s.split(['"', ';', '\n']).next())
        .unwrap_or_else(|| panic!("file name in {headers}"))
        .to_owned();
    assert!(headers.contains("Content-Type: text/csv"), "{headers}");
    let b64: String = body.lines().take_while(|l| !l.starts_with("--")).collect::<Vec<_>>().concat();
    (name, base64::engine::general_purpose::STANDARD.decode(b64.trim()).expect("base64 attachment"))
}

#[tokio::test]
async fn a_csv_export_arrives_by_mail_as_an_attachment() {
    let (hub, sink) = common::spawn_hub_with_mail().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let s = hub.state();
    let sat = seed::satellite(&hub, owner.tenant, "meadow").await;
    let yesterday = s.clock.now() - Span::days(1);
    seed::heard(&hub, owner.tenant, sat, &iso(yesterday), seed::ROBIN, 0.91).await;
    seed::heard(&hub, owner.tenant, sat, &iso(yesterday + Span::minutes(5)), seed::WREN, 0.82).await;
    let mail = api
        .create(
            "/alert-rules/channels",
            json!({"type": "email", "name": "me", "config": {"to": ["birder@example.org"]}}),
        )
        .await;
    let made = api
        .create(
            "/exports/scheduled",
            json!({"name": "Hourly", "format": "csv", "filters": {"days": 7}, "cron": "0 * * * *",
            "timezone": "UTC", "channelId": mail["id"]}),
        )
        .await;
    let id = made["id"].as_str().expect("id");

    assert_eq!(pass(&hub).await, 0, "not due yet");
    s.clock.advance(Duration::from_secs(61 * 60));
    pass(&hub).await;
    let got = sink.wait_for(1).await;
    assert_eq!(got.len(), 1);
    let message = &got[0];
    assert!(message.contains("birder@example.org") && message.contains("multipart/mixed"), "{message}");
    let (name, bytes) = attachment(message);
    assert!(name.ends_with(".csv"), "{name}");
    let mut reader = csv::Reader::from_reader(bytes.as_slice());
    let headers = reader.headers().expect("header row").clone();
    let rows: Vec<csv::StringRecord> = reader.records().collect::<Result<_, _>>().expect("CSV rows");
    assert_eq!(rows.len(), 2, "both detections of the last 7 days");
    let species =
        headers.iter().position(|h| h.to_lowercase().contains("scientific")).expect("a scientific name column");
    let mut names: Vec<&str> = rows.iter().map(|r| &r[species]).collect();
    names.sort();
    assert_eq!(names, ["Troglodytes aedon", "Turdus migratorius"]);

    let after = status_becomes(&api, id, "delivered").await;
    assert!(after["lastRunAt"].is_string() && after["lastError"].is_null(), "{after}");
}

#[tokio::test]
async fn a_json_export_is_posted_to_a_webhook_and_signed() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let s = hub.state();
    let sat = seed::satellite(&hub, owner.tenant, "orchard").await;
    seed::heard(&hub, owner.tenant, sat, &iso(s.clock.now() - Span::hours(3)), seed::ROBIN, 0.9).await;
    let rx = Receiver::start(Some("shared secret")).await;
    let hook = api
        .create(
            "/alert-rules/channels",
            json!({"type": "webhook", "name": "archive", "config": {"url": rx.url("/exports"), "secret": "shared secret"}}),
        )
        .await;
    let made = api
        .create(
            "/exports/scheduled",
            json!({"name": "Nightly", "format": "json", "filters": {"days": 2}, "cron": "*/30 * * * *",
            "channelId": hook["id"]}),
        )
        .await;
    s.clock.advance(Duration::from_secs(31 * 60));
    pass(&hub).await;
    let got = rx.wait_for(1, 20).await;
    assert_eq!(got.len(), 1);
    let post = &got[0];
    assert_eq!(post.status, 200, "the receiver checked the signature against the raw body");
    assert!(post.header("x-service-signature").is_some_and(|h| h.starts_with("sha256=")));
    assert!(post.header("content-type").is_some_and(|h| h.starts_with("application/json")), "{:?}", post.headers);
    let disposition = post.header("content-disposition").expect("the file is named");
    assert!(disposition.starts_with("attachment; filename=\"") && disposition.contains(".json"), "{disposition}");
    let body = post.json();
    assert!(body.to_string().contains("Turdus migratorius"), "{body}");
    status_becomes(&api, made["id"].as_str().expect("id"), "delivered").await;
}

#[tokio::test]
async fn a_schedule_missed_while_the_hub_was_down_runs_once() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let rx = Receiver::start(None).await;
    let hook = api
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "rx", "config": {"url": rx.url("/h")}}))
        .await;
    let made = api
        .create(
            "/exports/scheduled",
            json!({"name": "Hourly", "format": "csv", "filters": {"days": 1}, "cron": "0 * * * *", "timezone": "UTC",
            "channelId": hook["id"]}),
        )
        .await;
    let id = made["id"].as_str().expect("id").to_owned();
    let dir = hub.stop_keeping_data().await;

    // Down for three and a half hours: three scheduled times pass.
    let hub = common::spawn_hub_in(dir, |_| {}).await;
    let s = hub.state();
    s.clock.advance(Duration::from_secs(3 * 3600 + 30 * 60));
    pass(&hub).await;
    pass(&hub).await;
    let api = hub.login(&owner.email).await;
    let got = rx.wait_for(2, 5).await;
    assert_eq!(got.len(), 1, "one run for the missed times, not three");
    let after = status_becomes(&api, &id, "delivered").await;
    let next = DateTime::parse_from_rfc3339(after["nextRuns"][0].as_str().expect("next")).expect("time");
    assert!(next > s.clock.now(), "the next run is after now: {next}");
    let ran = DateTime::parse_from_rfc3339(after["lastRunAt"].as_str().expect("lastRunAt")).expect("time");
    assert!(ran > DateTime::parse_from_rfc3339(made["nextRuns"][2].as_str().expect("third")).expect("time"));
    // The next hour runs again, once.
    s.clock.advance(Duration::from_secs(3600));
    pass(&hub).await;
    assert_eq!(rx.wait_for(3, 5).await.len(), 2);
}

#[tokio::test]
async fn a_failed_delivery_and_a_failed_render_are_recorded() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let s = hub.state();
    let rx = Receiver::start(None).await;
    let gone = api
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "gone", "config": {"url": rx.url("/gone")}}))
        .await;
    let refused = api
        .create(
            "/exports/scheduled",
            json!({"name": "To nowhere", "format": "csv", "cron": "*/10 * * * *", "channelId": gone["id"]}),
        )
        .await;
    let sat = seed::satellite(&hub, owner.tenant, "doomed").await;
    let ok = api
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "ok", "config": {"url": rx.url("/ok")}}))
        .await;
    let orphan = api
        .create(
            "/exports/scheduled",
            json!({"name": "One satellite", "format": "csv", "cron": "*/10 * * * *", "filters": {"satelliteId": sat},
            "channelId": ok["id"]}),
        )
        .await;
    // The satellite goes; its schedule's filter no longer names one of the team's satellites.
    let (status, _) = api.delete(&format!("/satellites/{sat}")).await;
    assert_eq!(status, 204);

    s.clock.advance(Duration::from_secs(11 * 60));
    pass(&hub).await;
    let failed = status_becomes(&api, refused["id"].as_str().expect("id"), "failed").await;
    assert!(failed["lastError"].as_str().is_some_and(|e| e.contains("404")), "{failed}");
    let (_, render) = api.get(&format!("/exports/scheduled/{}", orphan["id"].as_str().expect("id"))).await;
    assert_eq!(render["lastStatus"], "failed", "{render}");
    assert!(render["lastError"].as_str().is_some_and(|e| e.contains("satellite")), "{render}");
    assert!(rx.received().iter().all(|r| r.path == "/gone"), "nothing was sent for the failed render");
}

#[tokio::test]
async fn run_now_sends_at_once_keeps_the_schedule_and_is_for_the_teams_admins() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let member = hub.member_of("member@example.org", owner.tenant, Role::Member).await;
    let member = hub.login(&member.email).await;
    let stranger = hub.user("stranger@example.org", false).await;
    let stranger = hub.login(&stranger.email).await;
    let s = hub.state();
    let sat = seed::satellite(&hub, owner.tenant, "orchard").await;
    seed::heard(&hub, owner.tenant, sat, &iso(s.clock.now() - Span::hours(3)), seed::ROBIN, 0.9).await;
    let rx = Receiver::start(None).await;
    let hook = api
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "rx", "config": {"url": rx.url("/now")}}))
        .await;
    let made = api
        .create(
            "/exports/scheduled",
            json!({"name": "Monthly", "format": "json", "filters": {"days": 30}, "cron": "0 6 1 * *",
            "channelId": hook["id"]}),
        )
        .await;
    let id = made["id"].as_str().expect("id");
    let run = format!("/exports/scheduled/{id}/run");

    assert_error(&member.post_empty(&run).await, 403, "insufficient_role");
    assert_error(&stranger.post_empty(&run).await, 404, "scheduled_export_not_found");
    assert_error(
        &api.post_empty("/exports/scheduled/00000000-0000-4000-8000-000000000000/run").await,
        404,
        "scheduled_export_not_found",
    );
    assert_eq!(rx.received().len(), 0, "nothing was sent for a refused run");

    let (status, ran) = api.post_empty(&run).await;
    assert_eq!(status, 200, "{ran}");
    assert_eq!(ran["lastStatus"], "sending");
    assert!(ran["lastRunAt"].is_string());
    assert_eq!(ran["nextRuns"], made["nextRuns"], "the schedule's own runs stay as they were");
    let got = rx.wait_for(1, 20).await;
    assert!(got[0].json().to_string().contains("Turdus migratorius"));
    status_becomes(&api, id, "delivered").await;
}
