//! The OpenAPI document (`GET /api/openapi.json`) and the docs page (`/api/docs`): every route is
//! documented and every documented route is served, the SPEC's routes are all there (but the
//! named ones not built yet), stats answers match their schemas, and the docs page needs no internet.

mod common;

use std::collections::BTreeSet;

use common::seed;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The route tables of SPEC section 4 (4.8 lists only paths: all GET), as `METHOD /path`.
const SPEC_ROUTES: &str = "
POST /auth/register
POST /auth/login
POST /auth/login/mfa/totp
POST /auth/login/mfa/backup
POST /auth/login/mfa/passkey/begin
POST /auth/login/mfa/passkey/finish
POST /auth/forgot-password
POST /auth/reset-password
POST /auth/logout
GET /auth/me
PUT /auth/me/preferences
PUT /auth/me/profile
PUT /auth/me/password
DELETE /auth/me
POST /auth/mfa/totp/begin
POST /auth/mfa/totp/confirm
POST /auth/mfa/totp/cancel
POST /auth/mfa/disable
POST /auth/mfa/backup-codes/regenerate
POST /auth/mfa/passkeys/register/begin
POST /auth/mfa/passkeys/register/finish
GET /auth/mfa/passkeys
DELETE /auth/mfa/passkeys/:id
GET /auth/mfa/remembered-devices
DELETE /auth/mfa/remembered-devices/:id
POST /auth/mfa/admin/users/:id/reset
POST /auth/invites
GET /auth/invites
DELETE /auth/invites/:id
GET /auth/members
POST /auth/create-tenant
GET /detections
GET /detections/:id
GET /detections/votes
POST /detections/:id/verify
GET /detections/:id/comments
POST /detections/:id/comments
DELETE /detections/:id/comments/:commentId
GET /detections/:id/share
GET /share/detection/:id/:token
GET /share/audio/:id/:token
GET /share/spectrogram/:id/:token
POST /detections/:id/annotate
GET /detections/:id/annotations
GET /sessions
GET /sessions/timeline
GET /satellites
GET /satellites/:id
POST /satellites
POST /satellites/:id/rotate-api-key
PATCH /satellites/:id
POST /satellites/:id/profile
POST /satellites/:id/update
POST /satellites/:id/logs/request
GET /satellites/:id/config
PUT /satellites/:id/config
GET /satellites/:id/schedule
DELETE /satellites/:id
GET /audio/:chunkId
GET /alerts
POST /alerts/:id/acknowledge
GET /alert-rules/rules
POST /alert-rules/rules
PUT /alert-rules/rules/:id
DELETE /alert-rules/rules/:id
GET /alert-rules/channels
POST /alert-rules/channels
PUT /alert-rules/channels/:id
DELETE /alert-rules/channels/:id
POST /alert-rules/channels/:id/test
GET /export/detections
GET /export/checklist
GET /export/observation
GET /export/recording
GET /exports/scheduled
POST /exports/scheduled
PUT /exports/scheduled/:id
DELETE /exports/scheduled/:id
GET /stats/dashboard
GET /stats/trends
GET /stats/top-species
GET /stats/activity
GET /stats/verification
GET /stats/leaderboard
GET /stats/species
GET /stats/species/:code
GET /stats/compare
GET /stats/weather-correlation
GET /stats/migration
GET /stats/biodiversity
GET /stats/expected-species
GET /stats/activity-heatmap
GET /stats/satellite-activity
GET /stats/map
GET /stats/map/detections
GET /stats/species-accuracy
GET /species/languages
GET /species/translate
POST /species/translate
POST /species/images
GET /species/image/proxy
GET /species/image-cache/stats
POST /species/image-cache/clear
POST /species/image-cache/retry
POST /calibration/refresh
GET /calibration/curve
GET /calibration/coverage
GET /mobile/latest
GET /mobile/download/:id
GET /mobile/releases
POST /mobile/upload
PUT /mobile/releases/:id
DELETE /mobile/releases/:id
GET /workers
GET /workers/jobs
GET /settings/tenant
PUT /settings/tenant
GET /settings/platform
PUT /settings/platform
GET /tenants
POST /tenants/:id/leave
GET /system/status
GET /system/versions
GET /health
GET /admin/users
GET /admin/users/:id
PUT /admin/users/:id
POST /admin/users/:id/block
POST /admin/users/:id/reset-password
DELETE /admin/users/:id
POST /admin/users/:id/tenants
DELETE /admin/users/:id/tenants/:tid
PUT /admin/members/:id/role
DELETE /admin/members/:id
POST /admin/members/:id/transfer-ownership
GET /admin/audit-log
GET /ws/events
";

/// SPEC routes the hub does not serve yet, each with the issue that builds it. When one lands,
/// this test fails until it is taken off the list (so the list only shrinks).
const NOT_BUILT_YET: &[(&str, &str)] = &[];

/// Plain axum routes in `src/api/` that are not in the document, with why (file, reason).
const UNDOCUMENTED_ROUTES_ALLOWED: &[(&str, &str)] = &[
    ("extract.rs", "the router of a unit test of the JSON extractor, never served"),
    ("metrics.rs", "GET /metrics: Prometheus's text format at the root, outside /api (docs/metrics.md)"),
];

/// `GET /api/openapi.json` of a fresh hub, and the hub.
async fn served_document() -> (common::TestHub, Value) {
    let hub = common::spawn_hub().await;
    let (status, doc) = hub.anon().get("/openapi.json").await;
    assert_eq!(status, 200, "{doc}");
    (hub, doc)
}

/// `(METHOD, /api/path)` of every operation in the document.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in ["get", "put", "post", "delete", "patch", "head", "options"] {
            if item.get(method).is_some() {
                out.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    out
}

/// A path with every parameter (`:id` or `{id}`) written as `{}`, to compare SPEC and document.
fn shape(path: &str) -> String {
    path.split('/')
        .map(|seg| if seg.starts_with(':') || (seg.starts_with('{') && seg.ends_with('}')) { "{}" } else { seg })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
async fn the_document_is_openapi_3_1_and_lists_every_route_the_router_has() {
    let (_hub, doc) = served_document().await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    // The served document is the one built from the routers the hub serves.
    let built = serde_json::to_value(birdhub::api::document()).expect("json");
    assert_eq!(operations(&doc), operations(&built));

    let documented: BTreeSet<(String, String)> = operations(&doc).into_iter().map(|(m, p)| (m, shape(&p))).collect();
    let mut missing = Vec::new();
    let mut built_now = Vec::new();
    for line in SPEC_ROUTES.lines().filter(|l| !l.trim().is_empty()) {
        let (method, path) = line.trim().split_once(' ').expect("METHOD /path");
        let key = (method.to_owned(), shape(&format!("/api{path}")));
        let exempt = NOT_BUILT_YET.iter().any(|(r, _)| *r == line.trim());
        match (documented.contains(&key), exempt) {
            (false, false) => missing.push(line.trim()),
            (true, true) => built_now.push(line.trim()),
            _ => {}
        }
    }
    assert!(missing.is_empty(), "SPEC routes missing from the document: {missing:#?}");
    assert!(built_now.is_empty(), "documented now, take them off NOT_BUILT_YET: {built_now:#?}");

    // Every operation says who may call it and how it fails.
    for (method, path) in operations(&doc) {
        let op = &doc["paths"][&path][method.to_lowercase()];
        assert!(op["tags"].as_array().is_some_and(|t| !t.is_empty()), "{method} {path} has no tag");
        assert!(op["description"].as_str().is_some_and(|d| !d.is_empty()), "{method} {path} has no description");
        for (status, response) in op["responses"].as_object().expect("responses") {
            if status.starts_with('4') {
                let schema = &response["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(schema, "#/components/schemas/ErrorBody", "{method} {path} {status}");
            }
        }
    }
    assert_eq!(doc["paths"]["/api/health"]["get"]["security"], json!([{}]), "health is public");
    assert!(doc["security"].as_array().is_some_and(|s| s.len() == 2), "cookie or bearer by default");
}

#[test]
fn no_route_bypasses_the_document() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/api");
    let mut offenders = Vec::new();
    for entry in std::fs::read_dir(dir).expect("src/api") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if !name.ends_with(".rs") || UNDOCUMENTED_ROUTES_ALLOWED.iter().any(|(f, _)| *f == name) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for call in [".route(", ".route_service(", ".nest_service(", ".fallback_service("] {
                if code.contains(call) {
                    offenders.push(format!("{name}:{}: {}", n + 1, code));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "routes outside the OpenAPI document (use `.routes(routes!(..))`): {offenders:#?}");
}

/// A request to `path` with every parameter filled in.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|seg| match seg {
            "{file}" => "index.html",
            "{code}" | "{token}" => "abc",
            s if s.starts_with('{') => "00000000-0000-4000-8000-000000000000",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
async fn every_documented_route_is_served() {
    let (hub, doc) = served_document().await;
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    for (method, path) in operations(&doc) {
        let url = format!("{}{}", hub.base_url, concrete(&path));
        let response =
            client.request(Method::from_bytes(method.as_bytes()).expect("method"), &url).send().await.expect("request");
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        let fallback = body["message"] == "no such endpoint" || body["code"] == "method_not_allowed";
        assert!(!fallback, "{method} {path}: answered by the fallback ({status} {body})");
        assert!(status.as_u16() < 500, "{method} {path}: {status} {body}");
    }
}

/// The 200 JSON schema of `GET path`.
fn response_schema(doc: &Value, path: &str) -> Value {
    let schema = doc["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"].clone();
    assert!(schema.is_object(), "{path} has no 200 schema");
    schema
}

/// Where `value` breaks `schema` (the JSON Schema keywords utoipa writes: `$ref` into
/// `#/components/schemas`, `type` (one or a list), `properties`, `required`, `items`, `allOf`,
/// `oneOf`, `anyOf`, `enum`, `minimum`), as JSON pointers with the reason. A keyword it does not
/// know fails the check, so the checker cannot silently pass what it does not read.
/// (A validator crate would rebuild serde_json with other features: a second dependency tree.)
fn violations(doc: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(rules) = schema.as_object() else { return vec![format!("{at}: schema is not an object")] };
    for (key, rule) in rules {
        match key.as_str() {
            "$ref" => {
                let name = rule.as_str().and_then(|r| r.strip_prefix("#/components/schemas/")).expect("local ref");
                let target = &doc["components"]["schemas"][name];
                assert!(target.is_object(), "unresolved {rule}");
                out.extend(violations(doc, target, value, at));
            }
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                    other => other.as_str().into_iter().collect(),
                };
                let fits = |t: &str| match t {
                    "object" => value.is_object(),
                    "array" => value.is_array(),
                    "string" => value.is_string(),
                    "boolean" => value.is_boolean(),
                    "null" => value.is_null(),
                    "number" => value.is_number(),
                    "integer" => value.is_i64() || value.is_u64(),
                    _ => false,
                };
                if !types.iter().any(|t| fits(t)) {
                    out.push(format!("{at}: {value} is not {types:?}"));
                }
            }
            "properties" => {
                if let Some(obj) = value.as_object() {
                    for (name, sub) in rule.as_object().expect("properties") {
                        if let Some(v) = obj.get(name) {
                            out.extend(violations(doc, sub, v, &format!("{at}/{name}")));
                        }
                    }
                }
            }
            "required" => {
                if let Some(obj) = value.as_object() {
                    for name in rule.as_array().expect("required").iter().filter_map(Value::as_str) {
                        if !obj.contains_key(name) {
                            out.push(format!("{at}: `{name}` is missing"));
                        }
                    }
                }
            }
            "items" => {
                for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                    out.extend(violations(doc, rule, item, &format!("{at}/{i}")));
                }
            }
            "allOf" => {
                for sub in rule.as_array().expect("allOf") {
                    out.extend(violations(doc, sub, value, at));
                }
            }
            "oneOf" | "anyOf" => {
                let passing =
                    rule.as_array().expect(key).iter().filter(|s| violations(doc, s, value, at).is_empty()).count();
                let ok = if key == "oneOf" { passing == 1 } else { passing >= 1 };
                if !ok {
                    out.push(format!("{at}: {value} matches {passing} of {key}"));
                }
            }
            "enum" => {
                if !rule.as_array().expect("enum").contains(value) {
                    out.push(format!("{at}: {value} is not one of {rule}"));
                }
            }
            "minimum" => {
                if value.as_f64().zip(rule.as_f64()).is_some_and(|(v, min)| v < min) {
                    out.push(format!("{at}: {value} < {rule}"));
                }
            }
            "description" | "format" | "title" | "example" | "examples" | "default" => {}
            other => out.push(format!("{at}: the checker does not know `{other}`")),
        }
    }
    out
}

#[tokio::test]
async fn stats_and_export_answers_validate_against_their_schemas() {
    let (hub, doc) = served_document().await;
    let me = hub.user("owner@example.org", false).await;
    let sat = seed::satellite(&hub, me.tenant, "north").await;
    seed::heard(&hub, me.tenant, sat, "2026-06-10T12:00:00.000Z", seed::ROBIN, 0.9).await;
    seed::heard(&hub, me.tenant, sat, "2026-06-11T12:00:00.000Z", seed::WREN, 0.7).await;
    let api = hub.login(&me.email).await;
    for (route, query) in [
        ("/stats/dashboard", "?from=2026-06-01&to=2026-06-30"),
        ("/stats/trends", "?from=2026-06-01&to=2026-06-30"),
        ("/stats/dashboard", &format!("?satelliteId={sat}&days=7") as &str),
        ("/stats/trends", ""),
    ] {
        let (status, body) = api.get(&format!("{route}{query}")).await;
        assert_eq!(status, 200, "{body}");
        let schema = response_schema(&doc, &format!("/api{route}"));
        let errors = violations(&doc, &schema, &body, "");
        assert!(errors.is_empty(), "{route}{query}: {errors:#?}\n{body}");

        // The schema is precise: a field taken away or of the wrong type is caught.
        let mut broken = body.clone();
        let object = broken.as_object_mut().expect("object");
        object.remove("from");
        assert!(!violations(&doc, &schema, &broken, "").is_empty(), "{route}: a missing `from` passes");
        let mut wrong = body.clone();
        wrong["days"] = json!("thirty");
        assert!(!violations(&doc, &schema, &wrong, "").is_empty(), "{route}: a text `days` passes");
    }
    let (_, june) = api.get("/stats/dashboard?from=2026-06-01&to=2026-06-30").await;
    assert_eq!(june["detections"], 2, "{june}");

    // The JSON export: every row matches the documented detection, and the schema is precise.
    let (status, rows) = api.get("/export/detections?format=json&from=2026-06-01&to=2026-06-30").await;
    assert_eq!(status, 200, "{rows}");
    assert_eq!(rows.as_array().map(Vec::len), Some(2), "{rows}");
    let schema = response_schema(&doc, "/api/export/detections");
    let errors = violations(&doc, &schema, &rows, "");
    assert!(errors.is_empty(), "JSON export: {errors:#?}\n{rows}");
    let mut wrong = rows.clone();
    wrong[0]["confidence"] = json!("high");
    assert!(!violations(&doc, &schema, &wrong, "").is_empty(), "a text confidence passes");
    let mut missing = rows.clone();
    missing[1].as_object_mut().expect("row").remove("species_code");
    assert!(!violations(&doc, &schema, &missing, "").is_empty(), "a row without species_code passes");
}

/// Every `src="..."` and `href="..."` of an HTML page.
fn asset_urls(html: &str) -> Vec<String> {
    let mut urls = Vec::new();
    for attr in ["src=\"", "href=\""] {
        let mut rest = html;
        while let Some(i) = rest.find(attr) {
            rest = &rest[i + attr.len()..];
            if let Some(end) = rest.find('"') {
                urls.push(rest[..end].to_owned());
                rest = &rest[end..];
            }
        }
    }
    urls
}

#[tokio::test]
async fn the_docs_page_is_served_by_the_hub_alone() {
    let (hub, _) = served_document().await;
    let page = reqwest::get(hub.api("/docs")).await.expect("docs");
    assert_eq!(page.status(), StatusCode::OK);
    let page_url = page.url().clone();
    assert!(page.headers()["content-type"].to_str().unwrap_or_default().starts_with("text/html"));
    let html = page.text().await.expect("html");
    assert!(html.contains("swagger"), "{html}");
    let urls = asset_urls(&html);
    assert!(urls.iter().any(|u| u.ends_with(".js")) && urls.iter().any(|u| u.ends_with(".css")), "{urls:?}");
    for url in &urls {
        assert!(!url.contains("://") && !url.starts_with("//"), "the docs page loads {url} from elsewhere");
        let absolute = page_url.join(url).expect("url");
        let asset = reqwest::get(absolute.clone()).await.expect("asset");
        assert_eq!(asset.status(), StatusCode::OK, "{absolute}");
    }
    // The page reads the hub's own document, and no validator badge calls out.
    let init = reqwest::get(page_url.join("swagger-initializer.js").expect("url")).await.expect("init");
    let init = init.text().await.expect("text");
    assert!(init.contains("../openapi.json"), "{init}");
    assert!(!init.contains("http://") && !init.contains("https://"), "{init}");
    let (status, _) = hub.anon().get("/docs/no-such-file.js").await;
    assert_eq!(status, 404);
}
