//! `GET /stats/weather-correlation`: a real hub asks a fake Open-Meteo archive server (a local
//! axum app) for the weather at its satellites' place, keeps it per day, and correlates it with
//! the team's detections per local day. A provider that is off, down, slow or talks nonsense is an
//! `available: false` answer, never an error page; bad input is a 4xx with a code.

mod common;

use birdhub::{
    domain::Role,
    ids::{SatelliteId, TenantId},
    store,
};
use chrono::{Local, NaiveDateTime, TimeZone, Utc};
use common::{
    TestHub, assert_error, seed,
    weather::{FakeWeather, Mode},
};
use serde_json::{Value, json};

/// The UTC timestamp of `day` at `hms` on the hub's (this process's) local clock.
/// A time on the Berlin clock, the zone of the test's satellites (their position, or the team's
/// zone, which the main test sets to Berlin): days are local to each station.
fn local(day: &str, hms: &str) -> String {
    let naive = NaiveDateTime::parse_from_str(&format!("{day} {hms}"), "%Y-%m-%d %H:%M:%S").expect("time");
    let at =
        chrono_tz::Europe::Berlin.from_local_datetime(&naive).earliest().expect("a local time").with_timezone(&Utc);
    at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

async fn weather_hub(url: &str) -> TestHub {
    let url = url.to_owned();
    common::spawn_hub_with(move |s| {
        s.weather.provider_url = url;
        s.weather.timeout_secs = 1;
    })
    .await
}

async fn located(hub: &TestHub, tenant: TenantId, name: &str, lat: f64, lon: f64) -> SatelliteId {
    let sat = seed::satellite(hub, tenant, name).await;
    hub.state().store.call(move |c| store::satellites::set_location(c, tenant, sat, lat, lon)).await.expect("located");
    sat
}

/// `n` detections on local `day`, a minute apart from noon, at confidence 0.9.
async fn heard_on(hub: &TestHub, tenant: TenantId, sat: SatelliteId, day: &str, n: u32) {
    for i in 0..n {
        seed::heard(hub, tenant, sat, &local(day, &format!("12:{i:02}:00")), seed::ROBIN, 0.9).await;
    }
}

fn counts(body: &Value) -> Vec<i64> {
    body["days"].as_array().expect("days").iter().map(|d| d["detections"].as_i64().expect("count")).collect()
}

fn r(body: &Value, variable: &str) -> f64 {
    body["correlations"][variable]["r"].as_f64().unwrap_or_else(|| panic!("r of {variable}: {body}"))
}

#[tokio::test]
async fn detections_per_local_day_correlate_with_the_weather_fetched_once() {
    let fake = FakeWeather::start().await;
    // temperature [2, 1, 4, 3, 2], precipitation [5, 4, 3, 2, 1], wind [1, 3, 2, 5, 4]
    for (day, t, p, w) in [
        ("2025-06-01", 2.0, 5.0, 1.0),
        ("2025-06-02", 1.0, 4.0, 3.0),
        ("2025-06-03", 4.0, 3.0, 2.0),
        ("2025-06-04", 3.0, 2.0, 5.0),
        ("2025-06-05", 2.0, 1.0, 4.0),
    ] {
        fake.set_day(day, (Some(t), Some(p), Some(w)));
    }
    let hub = weather_hub(&fake.url()).await;
    let owner = hub.user("owner@example.org", false).await;
    let other = hub.user("other@example.org", false).await;
    let api = hub.login(&owner.email).await;
    // The shed has no position: it follows the team's zone, Berlin like the ridge's.
    let (status, body) = api.put("/settings/tenant", json!({"time_zone": "Europe/Berlin"})).await;
    assert_eq!(status, 200, "{body}");
    let ridge = located(&hub, owner.tenant, "ridge", 52.52, 13.41).await;
    let shed = seed::satellite(&hub, owner.tenant, "shed").await;

    // Accepted detections per local day: 1, 2, 3, 4, 5.
    seed::heard(&hub, owner.tenant, ridge, &local("2025-06-01", "00:00:30"), seed::ROBIN, 0.9).await;
    let (_, rejected) = seed::heard(&hub, owner.tenant, ridge, &local("2025-06-01", "12:00:00"), seed::WREN, 0.9).await;
    let (status, body) = api.post(&format!("/detections/{rejected}/verify"), json!({"vote": "reject"})).await;
    assert_eq!(status, 200, "{body}");
    seed::heard(&hub, owner.tenant, ridge, &local("2025-06-02", "12:00:00"), seed::ROBIN, 0.9).await;
    seed::heard(&hub, owner.tenant, ridge, &local("2025-06-02", "12:01:00"), seed::ROBIN, 0.3).await;
    heard_on(&hub, owner.tenant, ridge, "2025-06-03", 2).await;
    heard_on(&hub, owner.tenant, shed, "2025-06-03", 1).await;
    heard_on(&hub, owner.tenant, ridge, "2025-06-04", 4).await;
    heard_on(&hub, owner.tenant, ridge, "2025-06-05", 4).await;
    seed::heard(&hub, owner.tenant, ridge, &local("2025-06-05", "23:59:00"), seed::ROBIN, 0.9).await;
    // Just outside the range, on the Berlin clock; and another team's birds.
    seed::heard(&hub, owner.tenant, ridge, &local("2025-05-31", "23:59:30"), seed::ROBIN, 0.9).await;
    seed::heard(&hub, owner.tenant, ridge, &local("2025-06-06", "00:00:30"), seed::ROBIN, 0.9).await;
    let theirs = located(&hub, other.tenant, "theirs", 52.52, 13.41).await;
    heard_on(&hub, other.tenant, theirs, "2025-06-03", 7).await;

    let path = "/stats/weather-correlation?from=2025-06-01&to=2025-06-05";
    let (status, body) = api.get(path).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["available"], true);
    assert_eq!(body["location"], json!({"latitude": 52.5, "longitude": 13.4}), "the located satellite, to 0.1°");
    assert_eq!((body["from"].clone(), body["to"].clone()), (json!("2025-06-01"), json!("2025-06-05")));
    assert_eq!(body["units"], json!({"temperature": "°C", "precipitation": "mm", "wind": "km/h"}));
    assert_eq!(counts(&body), vec![1, 2, 3, 4, 5]);
    assert_eq!(
        body["days"][3],
        json!({"date": "2025-06-04", "detections": 4, "temperatureC": 3.0, "precipitationMm": 2.0, "windKmh": 5.0})
    );
    // x = detections 1 2 3 4 5 (mean 3, dx = -2 -1 0 1 2, Σdx² = 10).
    // Temperature y = 2 1 4 3 2: mean 2.4, dy = -0.4 -1.4 1.6 0.6 -0.4, Σdx·dy = 0.8 + 1.4 + 0 + 0.6 - 0.8
    //   = 2, Σdy² = 0.16 + 1.96 + 2.56 + 0.36 + 0.16 = 5.2, r = 2 / √(10 · 5.2) = 2 / √52 ≈ 0.277: weak.
    // Precipitation y = 5 4 3 2 1 = 6 - x: r = -1, strong.
    // Wind y = 1 3 2 5 4: dy = -2 0 -1 2 1, Σdx·dy = 4 + 0 + 0 + 2 + 2 = 8, Σdy² = 10, r = 8/10 = 0.8.
    assert!((r(&body, "temperature") - 2.0 / 52f64.sqrt()).abs() < 1e-9, "{body}");
    assert!((r(&body, "precipitation") + 1.0).abs() < 1e-9, "{body}");
    assert!((r(&body, "wind") - 0.8).abs() < 1e-9, "{body}");
    let c = &body["correlations"];
    assert_eq!(
        [&c["temperature"], &c["precipitation"], &c["wind"]].map(|v| (v["n"].clone(), v["strength"].clone())),
        [(json!(5), json!("weak")), (json!(5), json!("strong")), (json!(5), json!("strong"))]
    );

    let asked = fake.queries();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let q = &asked[0];
    let expect = [
        ("latitude", "52.5"),
        ("longitude", "13.4"),
        ("start_date", "2025-06-01"),
        ("end_date", "2025-06-05"),
        ("daily", "temperature_2m_mean,precipitation_sum,wind_speed_10m_max"),
        ("timezone", "auto"),
    ];
    for (k, v) in expect {
        assert_eq!(q.get(k).map(String::as_str), Some(v), "{k} in {q:?}");
    }

    // The same question again is answered from the cache.
    let (status, again) = api.get(path).await;
    assert_eq!((status.as_u16(), &again), (200, &body));
    assert_eq!(fake.queries().len(), 1, "no new provider call");

    // Rejected detections count when asked; low confidence ones drop out when asked.
    let (_, with_rejected) = api.get(&format!("{path}&includeRejected=true")).await;
    assert_eq!(counts(&with_rejected), vec![2, 2, 3, 4, 5]);
    // x = 2 2 3 4 5: mean 3.2, dx = -1.2 -1.2 -0.2 0.8 1.8, Σdx² = 1.44·2 + 0.04 + 0.64 + 3.24 = 6.8;
    // wind dy as above: Σdx·dy = 2.4 + 0 + 0.2 + 1.6 + 1.8 = 6, r = 6 / √(6.8 · 10) = 6 / √68.
    assert!((r(&with_rejected, "wind") - 6.0 / 68f64.sqrt()).abs() < 1e-9, "{with_rejected}");
    let (_, confident) = api.get(&format!("{path}&minConfidence=0.5")).await;
    assert_eq!(counts(&confident), vec![1, 1, 3, 4, 5]);
    // One satellite: its own detections; the weather of its place is the same cached place.
    let (_, ridge_only) = api.get(&format!("{path}&satelliteId={ridge}")).await;
    assert_eq!(counts(&ridge_only), vec![1, 2, 2, 4, 5]);
    let (status, unplaced) = api.get(&format!("{path}&satelliteId={shed}")).await;
    assert_eq!(status, 200);
    assert_eq!((unplaced["available"].clone(), unplaced["reasonCode"].clone()), (json!(false), json!("no_location")));
    assert_eq!(fake.queries().len(), 1, "all from the cache");

    // A wider range asks once for the span of the missing days. Days the provider has no value
    // for are not kept, so they are asked again later; 2025-06-06 came and is kept.
    fake.set_day("2025-06-06", (Some(9.0), Some(0.0), Some(7.5)));
    let wide = "/stats/weather-correlation?from=2025-05-30&to=2025-06-06";
    let (status, body) = api.get(wide).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(counts(&body), vec![0, 1, 1, 2, 3, 4, 5, 1]);
    assert_eq!(body["days"][0]["temperatureC"], Value::Null, "no weather that day");
    assert_eq!(body["days"][7]["windKmh"], 7.5);
    assert_eq!(body["correlations"]["wind"]["n"], 6, "days without weather are left out");
    let (_, _) = api.get(wide).await;
    let spans: Vec<(String, String)> =
        fake.queries().iter().map(|q| (q["start_date"].clone(), q["end_date"].clone())).collect();
    assert_eq!(
        spans,
        vec![
            ("2025-06-01".into(), "2025-06-05".into()),
            ("2025-05-30".into(), "2025-06-06".into()),
            ("2025-05-30".into(), "2025-05-31".into()),
        ]
    );

    // Another team's satellite is not found, not correlated.
    let (status, body) = api.get(&format!("{path}&satelliteId={theirs}")).await;
    assert_error(&(status, body), 404, "satellite_not_found");
}

#[tokio::test]
async fn the_default_range_ends_today_and_today_is_never_asked_for() {
    let fake = FakeWeather::start().await;
    let today = Local::now().date_naive();
    let day = |back: u64| (today - chrono::Days::new(back)).to_string();
    for back in 1..=2 {
        fake.set_day(&day(back), (Some(10.0), Some(1.0), Some(5.0)));
    }
    let hub = weather_hub(&fake.url()).await;
    let owner = hub.user("owner@example.org", false).await;
    // Two located satellites: the mean place (52.56, 13.42) rounds to (52.6, 13.4).
    located(&hub, owner.tenant, "north", 52.62, 13.44).await;
    let south = located(&hub, owner.tenant, "south", 52.50, 13.40).await;
    heard_on(&hub, owner.tenant, south, &day(0), 2).await;
    hub.member_of("viewer@example.org", owner.tenant, Role::Viewer).await;
    let viewer = hub.login("viewer@example.org").await;

    let (status, body) = viewer.get("/stats/weather-correlation?days=3").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["from"].clone(), body["to"].clone()), (json!(day(2)), json!(day(0))));
    assert_eq!(body["location"], json!({"latitude": 52.6, "longitude": 13.4}));
    assert_eq!(counts(&body), vec![0, 0, 2]);
    assert_eq!(body["days"][2]["temperatureC"], Value::Null, "today has no weather yet");
    assert_eq!(body["days"][1]["temperatureC"], 10.0);
    let (_, default) = viewer.get("/stats/weather-correlation").await;
    assert_eq!(default["days"].as_array().map(Vec::len), Some(30), "30 days by default");

    let asked = fake.queries();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!((asked[0]["latitude"].as_str(), asked[0]["longitude"].as_str()), ("52.6", "13.4"));
    assert_eq!((asked[0]["start_date"].clone(), asked[0]["end_date"].clone()), (day(2), day(1)));
    assert_eq!((asked[1]["start_date"].clone(), asked[1]["end_date"].clone()), (day(29), day(3)));
    let (_, again) = viewer.get("/stats/weather-correlation?days=3").await;
    assert_eq!(again, body);
    assert_eq!(fake.queries().len(), 2, "the past days are kept; today is not asked");
}

#[tokio::test]
async fn without_a_provider_the_answer_says_so_and_bad_input_is_still_refused() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let other = hub.user("other@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let ridge = located(&hub, owner.tenant, "ridge", 52.52, 13.41).await;
    let theirs = located(&hub, other.tenant, "theirs", 52.52, 13.41).await;

    let (status, body) = api.get(&format!("/stats/weather-correlation?satelliteId={ridge}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["available"].clone(), body["reasonCode"].clone()),
        (json!(false), json!("provider_not_configured"))
    );
    assert_eq!(body["reason"], "no weather provider is configured (set weather.provider_url)");
    assert_error(
        &api.get(&format!("/stats/weather-correlation?satelliteId={theirs}")).await,
        404,
        "satellite_not_found",
    );
    assert_error(&api.get("/stats/weather-correlation?days=0").await, 422, "invalid_range");
    assert_error(&hub.anon().get("/stats/weather-correlation").await, 401, "unauthenticated");
}

#[tokio::test]
async fn bad_input_is_a_4xx_with_a_code_and_asks_the_provider_nothing() {
    let fake = FakeWeather::start().await;
    let hub = weather_hub(&fake.url()).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    located(&hub, owner.tenant, "ridge", 52.52, 13.41).await;
    let tomorrow = Local::now().date_naive() + chrono::Days::new(1);
    let cases: Vec<(String, u16, &str)> = vec![
        ("days=0".into(), 422, "invalid_range"),
        ("days=-3".into(), 422, "invalid_range"),
        ("days=100000".into(), 422, "invalid_range"),
        ("days=367".into(), 422, "invalid_range"),
        ("days=soon".into(), 400, "invalid_query"),
        ("from=2025-06-05&to=2025-06-01".into(), 422, "invalid_range"),
        ("from=2024-01-01&to=2025-01-01".into(), 422, "invalid_range"),
        (format!("from=2025-06-01&to={tomorrow}"), 422, "invalid_range"),
        ("from=2025-06-31&to=2025-07-01".into(), 400, "invalid_query"),
        ("days=3&from=2025-06-01&to=2025-06-02".into(), 400, "invalid_query"),
        ("from=2025-06-01".into(), 400, "invalid_query"),
        ("minConfidence=2".into(), 422, "invalid_min_confidence"),
        ("minConfidence=-0.1".into(), 422, "invalid_min_confidence"),
        ("minConfidence=0.52".into(), 422, "invalid_min_confidence"),
        ("includeRejected=maybe".into(), 400, "invalid_query"),
        ("satelliteId=ridge".into(), 400, "invalid_query"),
        (format!("satelliteId={}", uuid::Uuid::new_v4()), 404, "satellite_not_found"),
    ];
    for (query, status, code) in &cases {
        let got = api.get(&format!("/stats/weather-correlation?{query}")).await;
        assert_eq!(got.0.as_u16(), *status, "{query}: {}", got.1);
        assert_error(&got, *status, code);
    }
    assert!(fake.queries().is_empty(), "{:?}", fake.queries());
    // The edges of what is allowed.
    let (status, body) = api.get("/stats/weather-correlation?from=2024-01-01&to=2024-12-31").await;
    assert_eq!((status.as_u16(), body["days"].as_array().map(Vec::len)), (200, Some(366)), "{body}");
    let (status, body) = api.get("/stats/weather-correlation?days=1&minConfidence=1").await;
    assert_eq!((status.as_u16(), body["available"].clone()), (200, json!(true)), "{body}");
}

#[tokio::test]
async fn a_provider_that_fails_is_an_answer_with_a_reason_never_a_5xx() {
    let fake = FakeWeather::start().await;
    let hub = weather_hub(&fake.url()).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    located(&hub, owner.tenant, "ridge", 52.52, 13.41).await;
    let path = "/stats/weather-correlation?from=2025-06-01&to=2025-06-03";

    let reason = "Parameter 'start_date' is out of allowed range from 1940-01-01 to 2026-11-20";
    let cases = [
        (Mode::Reply(500, "upstream exploded".into()), "provider_error", "HTTP 500"),
        (Mode::Reply(200, "{\"daily\": \"sunny\"}".into()), "provider_error", "not a daily weather document"),
        (Mode::Reply(200, "<html>maintenance</html>".into()), "provider_error", "not a daily weather document"),
        (Mode::Reply(400, json!({"error": true, "reason": reason}).to_string()), "provider_rejected", reason),
        (Mode::Reply(429, "slow down".into()), "provider_error", "HTTP 429"),
        (Mode::Huge, "provider_error", "larger than 1024 KiB"),
        (Mode::Hang, "provider_unreachable", "no answer within 1 s"),
    ];
    for (mode, code, needle) in cases {
        fake.set_mode(mode.clone());
        let (status, body) = api.get(path).await;
        assert_eq!(status, 200, "{mode:?}: {body}");
        assert_eq!((body["available"].clone(), body["reasonCode"].clone()), (json!(false), json!(code)), "{mode:?}");
        let text = body["reason"].as_str().expect("reason");
        assert!(text.contains(needle), "{mode:?}: {text}");
        assert!(!text.contains(&fake.base), "the provider's address stays private: {text}");
    }
    assert_eq!(fake.queries().len(), 7, "each failure asked once and kept nothing");

    // Back to normal: nothing bad was kept, the days are asked for and answered.
    fake.set_mode(Mode::Serve);
    for d in ["2025-06-01", "2025-06-02", "2025-06-03"] {
        fake.set_day(d, (Some(1.0), Some(0.0), Some(2.0)));
    }
    let (status, body) = api.get(path).await;
    assert_eq!((status.as_u16(), body["available"].clone()), (200, json!(true)), "{body}");
    assert_eq!(fake.queries().len(), 8);

    // A provider that is not there at all.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let gone = format!("http://{}/v1/archive", closed.local_addr().expect("addr"));
    drop(closed);
    let lonely = weather_hub(&gone).await;
    let someone = lonely.user("someone@example.org", false).await;
    located(&lonely, someone.tenant, "ridge", 52.52, 13.41).await;
    let (status, body) = lonely.login(&someone.email).await.get(path).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reasonCode"], "provider_unreachable", "{body}");
}

#[tokio::test]
async fn an_empty_team_gets_zeros_not_errors() {
    let fake = FakeWeather::start().await;
    for (d, t) in [("2025-06-01", 3.0), ("2025-06-02", 4.0), ("2025-06-03", 5.0)] {
        fake.set_day(d, (Some(t), Some(0.0), Some(10.0)));
    }
    let hub = weather_hub(&fake.url()).await;
    let lonely = hub.user("lonely@example.org", false).await;
    let api = hub.login(&lonely.email).await;
    let path = "/stats/weather-correlation?from=2025-06-01&to=2025-06-03";

    let (status, body) = api.get(path).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["available"].clone(), body["reasonCode"].clone()), (json!(false), json!("no_location")));
    assert!(fake.queries().is_empty());

    located(&hub, lonely.tenant, "ridge", -33.87, 151.21).await;
    let (status, body) = api.get(path).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["available"], true);
    assert_eq!(body["location"], json!({"latitude": -33.9, "longitude": 151.2}));
    assert_eq!(counts(&body), vec![0, 0, 0]);
    let none = json!({"r": null, "n": 3, "strength": null});
    assert_eq!(body["correlations"], json!({"temperature": none, "precipitation": none, "wind": none}));
    assert_eq!(fake.queries()[0]["latitude"], "-33.9");
}
