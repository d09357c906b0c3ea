//! `GET /metrics` (Prometheus text format 0.0.4) over real HTTP: who may scrape it, and that a real
//! bird sent over MQTT moves the chunk, inference, detection and HTTP series. Every scrape is read
//! with the strict parser below, so a line Prometheus would refuse fails the test, and the final
//! scrape also with Prometheus's own Python client parser.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::sat;
use reqwest::StatusCode;
use serde_json::{Value, json};

const KEY: &str = "metrics-internal-key-0123456789";

/// One sample of the exposition.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

fn is_name(s: &str, colons: bool) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (colons && c == ':'))
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colons && c == ':'))
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s.parse().map_err(|_| format!("bad value {s:?}")),
    }
}

/// `{a="x",b="y"}` after the metric name; returns the labels and the rest of the line.
fn parse_labels(mut s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    s = s.strip_prefix('{').ok_or("labels must open with {")?;
    loop {
        if let Some(rest) = s.strip_prefix('}') {
            return Ok((labels, rest));
        }
        let (name, rest) = s.split_once("=\"").ok_or("a label needs =\"")?;
        if !is_name(name, false) {
            return Err(format!("bad label name {name:?}"));
        }
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next().ok_or("unterminated label value")? {
                (i, '"') => break i,
                (_, '\\') => match chars.next().ok_or("dangling escape")?.1 {
                    'n' => value.push('\n'),
                    c @ ('\\' | '"') => value.push(c),
                    c => return Err(format!("bad escape \\{c}")),
                },
                (_, c) => value.push(c),
            }
        };
        if labels.insert(name.to_owned(), value).is_some() {
            return Err(format!("label {name} twice"));
        }
        s = &rest[end + 1..];
        s = s.strip_prefix(',').unwrap_or(s);
    }
}

/// Parses the whole exposition strictly: every line is a `# HELP`, a `# TYPE` or a sample, every
/// sample belongs to a family whose TYPE came first, histogram buckets carry `le`.
fn parse_exposition(text: &str) -> Vec<Sample> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = |why: String| -> ! { panic!("line {}: {why}: {line:?}", n + 1) };
        if line.trim().is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix("# ") {
            let mut parts = comment.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("HELP"), Some(name), Some(_)) if is_name(name, true) => {}
                (Some("TYPE"), Some(name), Some(kind)) if is_name(name, true) => {
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                        at(format!("unknown type {kind}"));
                    }
                    if types.insert(name.to_owned(), kind.to_owned()).is_some() {
                        at(format!("second TYPE for {name}"));
                    }
                }
                _ => at("a comment that is neither HELP nor TYPE".into()),
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or_else(|| at("no value".into()));
        let name = &line[..name_end];
        if !is_name(name, true) {
            at(format!("bad metric name {name:?}"));
        }
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end..]).unwrap_or_else(|e| at(e))
        } else {
            (BTreeMap::new(), &line[name_end..])
        };
        let mut fields = rest.strip_prefix(' ').unwrap_or_else(|| at("no space before the value".into())).split(' ');
        let value = parse_value(fields.next().unwrap_or_default()).unwrap_or_else(|e| at(e));
        if let Some(ts) = fields.next() {
            ts.parse::<i64>().unwrap_or_else(|_| at(format!("bad timestamp {ts:?}")));
        }
        if fields.next().is_some() {
            at("trailing fields".into());
        }
        let family = [("_bucket", "histogram"), ("_sum", "histogram"), ("_count", "histogram")]
            .iter()
            .chain([("_sum", "summary"), ("_count", "summary")].iter())
            .find_map(|(suffix, kind)| {
                let base = name.strip_suffix(suffix)?;
                (types.get(base).map(String::as_str) == Some(*kind)).then_some(base)
            })
            .unwrap_or(name);
        match types.get(family).map(String::as_str) {
            None => at(format!("sample of {name} has no TYPE before it")),
            Some("histogram") if family == name => at("a histogram sample without _bucket/_sum/_count".into()),
            Some("histogram") if name.ends_with("_bucket") && !labels.contains_key("le") => {
                at("a bucket without le".into())
            }
            _ => {}
        }
        samples.push(Sample { name: name.to_owned(), labels, value });
    }
    samples
}

/// The value of the sample `name` whose labels include `labels`, if there is one.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| s.name == name && labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v)))
        .map(|s| s.value)
}

fn client() -> reqwest::Client {
    birdhub::install_tls_provider();
    reqwest::Client::new()
}

/// `GET /metrics`, optionally with a bearer token: status, content type and body.
async fn get_metrics(hub: &common::TestHub, bearer: Option<&str>) -> (StatusCode, String, String) {
    let mut req = client().get(format!("{}/metrics", hub.base_url));
    if let Some(token) = bearer {
        req = req.bearer_auth(token);
    }
    let resp = req.send().await.expect("GET /metrics");
    let status = resp.status();
    let ctype = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    (status, ctype, resp.text().await.expect("body"))
}

/// Asserts a JSON error body `{code, message}` with this status.
fn assert_json_error(got: &(StatusCode, String, String), status: u16) {
    assert_eq!(got.0.as_u16(), status, "{}", got.2);
    assert!(got.1.starts_with("application/json"), "content type {}", got.1);
    let body: Value = serde_json::from_str(&got.2).expect("JSON error body");
    assert!(body["code"].is_string() && body["message"].is_string(), "{body}");
}

fn metrics_on(allow: &[&str]) -> impl FnOnce(&mut birdhub::config::Settings) {
    let allow: Vec<String> = allow.iter().map(|s| s.to_string()).collect();
    move |s| {
        s.metrics.enabled = true;
        s.metrics.allow = allow;
        s.security.internal_api_key = birdhub::config::Secret::new(KEY);
    }
}

#[tokio::test]
async fn only_the_internal_key_or_an_allowed_address_may_scrape() {
    let hub = common::spawn_hub_with(metrics_on(&["10.0.0.0/8", "192.168.1.20"])).await;
    assert_json_error(&get_metrics(&hub, None).await, 401);
    assert_json_error(&get_metrics(&hub, Some("not-the-key")).await, 401);
    assert_json_error(&get_metrics(&hub, Some(&format!("{KEY}x"))).await, 401);
    let (status, ctype, body) = get_metrics(&hub, Some(KEY)).await;
    assert_eq!(status, 200, "{body}");
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    let samples = parse_exposition(&body);
    assert_eq!(value(&samples, "birdhub_chunks_received_total", &[]), Some(0.0), "present from the start");
    assert_eq!(value(&samples, "birdhub_build_info", &[("version", env!("CARGO_PKG_VERSION"))]), Some(1.0));
    assert!(value(&samples, "birdhub_database_size_bytes", &[]).is_some_and(|b| b > 0.0), "{body}");
    assert!(value(&samples, "birdhub_process_resident_memory_bytes", &[]).is_some_and(|b| b > 0.0), "{body}");
    assert_eq!(value(&samples, "birdhub_inference_queue_depth", &[("status", "queued")]), Some(0.0));
    assert!(value(&samples, "birdhub_mqtt_clients_connected", &[]).is_some(), "{body}");
    // A user session is not the internal key.
    let owner = hub.user("owner@example.org", true).await;
    let token = hub.token(&owner.email).await;
    assert_json_error(&get_metrics(&hub, Some(&token)).await, 401);

    let allowed = common::spawn_hub_with(metrics_on(&["127.0.0.1/32"])).await;
    let (status, _, body) = get_metrics(&allowed, None).await;
    assert_eq!(status, 200, "127.0.0.1 is allowed without a key: {body}");
    parse_exposition(&body);
    assert_eq!(get_metrics(&allowed, Some("wrong")).await.0, 200, "the address alone is enough");

    let off = common::spawn_hub_with(|s| s.security.internal_api_key = birdhub::config::Secret::new(KEY)).await;
    assert_json_error(&get_metrics(&off, Some(KEY)).await, 404);
    assert_json_error(&get_metrics(&off, None).await, 404);
}

/// The number of samples Prometheus's own Python client library (`prometheus_client.parser`,
/// installed by `.ci/run` next to paho) reads from `body`; it panics on what that parser refuses.
fn reference_parse(body: &str) -> usize {
    use std::io::Write;
    let script = "import sys\nfrom prometheus_client.parser import text_string_to_metric_families as parse\n\
                  print(sum(len(f.samples) for f in parse(sys.stdin.read())))";
    let mut child = std::process::Command::new(common::paho::python())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python");
    child.stdin.take().expect("stdin").write_all(body.as_bytes()).expect("write");
    let out = child.wait_with_output().expect("python");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "prometheus_client refused the exposition: {stderr}");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or_else(|_| panic!("no count: {stderr}"))
}

/// Scrapes with the key until `ready` holds (at most 20 s); the samples of the last scrape.
async fn scrape_until(hub: &common::TestHub, ready: impl Fn(&[Sample]) -> bool) -> (Vec<Sample>, String) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (status, _, body) = get_metrics(hub, Some(KEY)).await;
        assert_eq!(status, 200, "{body}");
        let samples = parse_exposition(&body);
        if ready(&samples) || std::time::Instant::now() > deadline {
            assert_eq!(reference_parse(&body), samples.len(), "the reference parser reads another set of samples");
            return (samples, body);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_real_bird_moves_the_chunk_inference_detection_and_http_series() {
    let hub = common::spawn_hub_with(|s| {
        common::with_model(s);
        metrics_on(&[])(s);
    })
    .await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "hemlock ridge"})).await;
    let mut c = sat::connect(&hub, &r).await;
    assert!(c.subscribe(&format!("{}#", r.prefix)).await);

    let chunk = uuid::Uuid::new_v4().to_string();
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &sat::warbler_wav(), 48_000, 3000)).await;
    assert_eq!(c.message_on(&r.topic("ack"), 10).await.expect("ack")["status"], "stored");
    let detection = c.message_on(&r.topic("detection"), 60).await.expect("a detection");
    let id = detection["id"].as_str().expect("detection id").to_owned();
    c.publish(&r.topic("audio"), b"{not json".to_vec()).await;
    assert_eq!(c.message_on(&r.topic("ack"), 10).await.expect("error ack")["status"], "error");

    assert_eq!(api.get(&format!("/detections/{id}")).await.0, 200);
    // The dashboard's page of the detection (its own API calls stay inside the hub).
    let page = api.client.get(format!("{}/detections/{id}", hub.base_url)).send().await.expect("page");
    assert_eq!(page.status(), 200);
    let missing = uuid::Uuid::new_v4();
    assert_eq!(api.get(&format!("/detections/{missing}")).await.0, 404);
    assert_eq!(
        client().get(format!("{}/no/such/page/{missing}", hub.base_url)).send().await.expect("get").status(),
        404
    );

    let (samples, body) = scrape_until(&hub, |s| {
        value(s, "birdhub_inference_batch_duration_seconds_count", &[]).is_some_and(|n| n >= 1.0)
            && value(s, "birdhub_inference_jobs_total", &[("result", "succeeded")]).is_some_and(|n| n >= 1.0)
    })
    .await;
    let get = |name: &str, labels: &[(&str, &str)]| value(&samples, name, labels).unwrap_or(-1.0);
    assert_eq!(get("birdhub_chunks_received_total", &[]), 2.0, "{body}");
    assert_eq!(get("birdhub_chunks_stored_total", &[]), 1.0, "{body}");
    assert_eq!(get("birdhub_chunks_refused_total", &[("reason", "malformed")]), 1.0, "{body}");
    assert_eq!(get("birdhub_detections_total", &[("satellite", &r.id)]), 1.0, "{body}");
    assert!(get("birdhub_inference_batch_duration_seconds_count", &[]) >= 1.0, "{body}");
    assert!(get("birdhub_inference_batch_duration_seconds_sum", &[]) > 0.0, "{body}");
    assert_eq!(get("birdhub_inference_jobs_total", &[("result", "succeeded")]), 1.0, "{body}");
    assert_eq!(get("birdhub_inference_queue_depth", &[("status", "queued")]), 0.0, "{body}");
    assert!(get("birdhub_mqtt_clients_connected", &[]) >= 1.0, "{body}");
    assert!(get("birdhub_mqtt_messages_received_total", &[]) >= 2.0, "{body}");

    // HTTP series carry the route template, never the id in the path.
    let route = "/api/detections/{id}";
    let ok = [("method", "GET"), ("route", route), ("status", "200")];
    assert_eq!(get("birdhub_http_requests_total", &ok), 1.0, "{body}");
    let page = [("method", "GET"), ("route", "/detections/{id}"), ("status", "200")];
    assert_eq!(get("birdhub_http_requests_total", &page), 1.0, "pages count under their template: {body}");
    assert_eq!(get("birdhub_http_requests_total", &[("route", route), ("status", "404")]), 1.0, "{body}");
    assert!(get("birdhub_http_request_duration_seconds_count", &[("method", "GET"), ("route", route)]) >= 2.0);
    assert!(get("birdhub_http_requests_total", &[("route", "/api/satellites"), ("method", "POST")]) >= 1.0);
    assert!(get("birdhub_http_requests_total", &[("route", "unmatched"), ("status", "404")]) >= 1.0, "{body}");
    let routes: BTreeSet<&str> =
        samples.iter().filter_map(|s| s.labels.get("route")).map(String::as_str).collect::<BTreeSet<_>>();
    assert!(routes.iter().all(|r| !r.contains(&id) && !r.contains(&missing.to_string())), "{routes:?}");
    assert!(!body.contains(&id) && !body.contains(&missing.to_string()), "no raw id anywhere");
}

#[test]
fn the_parser_refuses_what_prometheus_would_refuse() {
    let ok = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"q\\\"\\\\\"} 3\n# TYPE h histogram\n\
              h_bucket{le=\"+Inf\"} 1\nh_sum 0.5\nh_count 1\n";
    let samples = parse_exposition(ok);
    assert_eq!(samples.len(), 4);
    assert_eq!(samples[0].labels["x"], "q\"\\");
    for bad in [
        "a_total 1\n",                               // no TYPE
        "# TYPE a counter\na{x=\"1\" 2\n",           // unterminated labels
        "# TYPE a counter\na 1 2 3\n",               // trailing field
        "# TYPE h histogram\nh 1\n",                 // bare histogram sample
        "# TYPE h histogram\nh_bucket 1\n",          // bucket without le
        "# EOF\n",                                   // not 0.0.4
        "# TYPE a counter\n# TYPE a counter\na 1\n", // two TYPEs
    ] {
        assert!(std::panic::catch_unwind(|| parse_exposition(bad)).is_err(), "accepted {bad:?}");
    }
}
