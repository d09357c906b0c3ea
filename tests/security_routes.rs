//! `docs/security.md` is the contract of who reaches what. This test reads its route table and the
//! hub's router (the OpenAPI document lists every route the router serves, `tests/openapi.rs`
//! holds the two equal) and fails when:
//! - a route of the router is missing from the table, or the table names one the hub does not serve;
//! - a route answers a credential the table does not allow (anything but 401, 403 or 404);
//! - a read, or a write given a malformed body, refuses a credential the table allows.
//!
//! Every credential acts on real objects of one team (its satellite, detection, chunk, channel,
//! rule, comment, invite, key), so a missing check shows as a success rather than a 404.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use birdhub::{config::Secret, domain::Role};
use common::{PASSWORD, seed};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const DOC: &str = include_str!("../docs/security.md");
const INTERNAL_KEY: &str = "internal-key-of-the-reverse-proxy-0123456789";

/// The access column of the route table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Public,
    Person,
    SignedIn,
    Viewer,
    /// Viewer+, Member+ or Admin+, and a person: the route answers about or records the
    /// caller's own doings (their votes, comments, devices, invites and keys), so keys are refused.
    PersonViewer,
    Member,
    PersonMember,
    Admin,
    PersonAdmin,
    Device,
    Platform,
}

impl Access {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "public" => Self::Public,
            "person" => Self::Person,
            "signed-in" => Self::SignedIn,
            "viewer" => Self::Viewer,
            "person-viewer" => Self::PersonViewer,
            "person-member" => Self::PersonMember,
            "person-admin" => Self::PersonAdmin,
            "member" => Self::Member,
            "admin" => Self::Admin,
            "device" => Self::Device,
            "platform" => Self::Platform,
            _ => return None,
        })
    }
}

/// The credentials the test holds, all aimed at one team ("the team").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Cred {
    Anonymous,
    ViewerSession,
    MemberSession,
    AdminSession,
    /// The admin of another team, who is no member of this one.
    OutsiderSession,
    PlatformAdminSession,
    ViewerKey,
    MemberKey,
    AdminKey,
    /// The satellite-scoped key of the team's satellite (the one every `:id` names).
    SatelliteKey,
    /// A remote inference worker's key (`bhw.<id>.<secret>`): an MQTT login, no HTTP credential.
    WorkerKey,
    Internal,
}

const CREDS: [Cred; 12] = [
    Cred::Anonymous,
    Cred::ViewerSession,
    Cred::MemberSession,
    Cred::AdminSession,
    Cred::OutsiderSession,
    Cred::PlatformAdminSession,
    Cred::ViewerKey,
    Cred::MemberKey,
    Cred::AdminKey,
    Cred::SatelliteKey,
    Cred::WorkerKey,
    Cred::Internal,
];

/// What the table allows. The satellite key reaches only the rows marked `own`.
fn allowed(access: Access, own: bool, cred: Cred) -> bool {
    use Cred::*;
    if cred == SatelliteKey {
        return own || access == Access::Public;
    }
    if cred == WorkerKey {
        return access == Access::Public;
    }
    let person = matches!(cred, ViewerSession | MemberSession | AdminSession | OutsiderSession | PlatformAdminSession);
    let team_role = match cred {
        ViewerSession | ViewerKey => Some(Role::Viewer),
        MemberSession | MemberKey => Some(Role::Member),
        AdminSession | AdminKey | PlatformAdminSession | Internal => Some(Role::Admin),
        _ => None,
    };
    match access {
        Access::Public => true,
        Access::Person => person,
        Access::SignedIn => cred != Anonymous,
        Access::Viewer => team_role.is_some(),
        Access::PersonViewer => person && team_role.is_some(),
        Access::PersonMember => person && team_role.is_some_and(|r| r.at_least(Role::Member)),
        Access::PersonAdmin => person && team_role == Some(Role::Admin),
        Access::Member => team_role.is_some_and(|r| r.at_least(Role::Member)),
        // The team's satellite is team-owned (no registrant), so only admins manage it.
        Access::Admin | Access::Device => team_role == Some(Role::Admin),
        Access::Platform => matches!(cred, PlatformAdminSession | Internal),
    }
}

#[derive(Debug)]
struct Row {
    access: Access,
    satellite_key: bool,
}

/// `METHOD /api/path/:param` -> its row, from the tables of `docs/security.md` whose first column
/// is an HTTP method.
fn table() -> BTreeMap<String, Row> {
    let mut rows = BTreeMap::new();
    for line in DOC.lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 4 || !["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&cells[0]) {
            continue;
        }
        let path = cells[1].trim_matches('`');
        let access = Access::parse(cells[2]).unwrap_or_else(|| panic!("unknown access {:?} in: {line}", cells[2]));
        let satellite_key = match cells[3] {
            "own" => true,
            "" | "-" | "no" => false,
            other => panic!("satellite key column must be `own` or empty, not {other:?}: {line}"),
        };
        let key = format!("{} {path}", cells[0]);
        assert!(rows.insert(key.clone(), Row { access, satellite_key }).is_none(), "{key} is in the table twice");
    }
    rows
}

/// Every route of the router as `METHOD /api/path/:param`, and whether it takes a JSON body.
fn router_routes() -> BTreeMap<String, bool> {
    let doc = serde_json::to_value(birdhub::api::document()).expect("document");
    let mut out = BTreeMap::new();
    for (path, ops) in doc["paths"].as_object().expect("paths") {
        let path = path.replace('{', ":").replace('}', "");
        for (method, op) in ops.as_object().expect("operations") {
            if !["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                continue;
            }
            let json_body = op["requestBody"]["content"].get("application/json").is_some();
            out.insert(format!("{} {path}", method.to_uppercase()), json_body);
        }
    }
    out
}

#[test]
fn every_route_is_in_the_table_and_every_row_is_a_route() {
    let table = table();
    let routes = router_routes();
    let missing: Vec<_> = routes.keys().filter(|r| !table.contains_key(*r)).collect();
    let stale: Vec<_> = table.keys().filter(|r| !routes.contains_key(*r)).collect();
    assert!(missing.is_empty(), "routes missing from docs/security.md: {missing:#?}");
    assert!(stale.is_empty(), "docs/security.md names routes the hub does not serve: {stale:#?}");
    assert!(table.len() > 100, "the table was read ({} rows)", table.len());
}

#[test]
fn the_satellite_key_rows_are_the_keys_allow_list() {
    let documented: BTreeSet<String> =
        table().into_iter().filter(|(_, row)| row.satellite_key).map(|(route, _)| route).collect();
    let enforced: BTreeSet<String> = birdhub::auth::satellite_key::allowed_calls()
        .into_iter()
        .map(|(method, path)| format!("{method} /api{}", path.replace("{id}", ":id")))
        .collect();
    assert_eq!(documented, enforced, "the `own` rows of docs/security.md and src/auth/satellite_key.rs");
}

/// The objects every `:param` is filled with.
struct World {
    tenant: String,
    satellite: String,
    detection: String,
    chunk: String,
    comment: String,
    channel: String,
    rule: String,
    scheduled: String,
    invite: String,
    spare_key: String,
    viewer_user: String,
    membership: String,
    species: &'static str,
}

impl World {
    fn fill(&self, route: &str) -> String {
        let (_, path) = route.split_once(' ').expect("method and path");
        let path = path.strip_prefix("/api").expect("under /api");
        let segments: Vec<&str> = path.split('/').collect();
        let mut out = Vec::new();
        for (i, seg) in segments.iter().enumerate() {
            let Some(param) = seg.strip_prefix(':') else {
                out.push((*seg).to_owned());
                continue;
            };
            let parent = segments[..i].join("/");
            let value = match (parent.as_str(), param) {
                (p, "id") if p.starts_with("/satellites") => self.satellite.clone(),
                (p, "id") if p.starts_with("/detections") => self.detection.clone(),
                (_, "comment_id" | "commentId") => self.comment.clone(),
                (_, "chunk_id" | "chunkId") => self.chunk.clone(),
                ("/alert-rules/channels", "id") => self.channel.clone(),
                ("/alert-rules/rules", "id") => self.rule.clone(),
                ("/exports/scheduled", "id") => self.scheduled.clone(),
                ("/auth/invites", "id") => self.invite.clone(),
                ("/api-keys", "id") => self.spare_key.clone(),
                (p, "id") if p.starts_with("/admin/users") || p.starts_with("/auth/mfa/admin/users") => {
                    self.viewer_user.clone()
                }
                ("/admin/members", "id") => self.membership.clone(),
                (p, "tid") if p.starts_with("/admin/users") => self.tenant.clone(),
                ("/tenants", "id") => self.tenant.clone(),
                ("/public", "tenantId") => self.tenant.clone(),
                (_, "detectionId") => self.detection.clone(),
                (p, "id") if p.starts_with("/share") => self.detection.clone(),
                (_, "token") => "0".repeat(64),
                (_, "code") => self.species.to_owned(),
                ("/docs", "file") => "openapi.json".to_owned(),
                _ => uuid::Uuid::new_v4().to_string(),
            };
            out.push(value);
        }
        format!("{}?tenantId={}", out.join("/"), self.tenant)
    }
}

/// Well-formed bodies for the routes that read their body before they decide who may call them
/// (the team is named in the body, or the device rule runs after the body is parsed). A refused
/// credential is tried with one of these when the malformed body gets a 400 or 422, so the refusal
/// itself is seen; each would change something if the refusal were missing.
fn example(route: &str) -> Option<Value> {
    Some(match route {
        "PATCH /api/satellites/:id" => json!({"name": "taken over"}),
        "PUT /api/tenants/:id/name" => json!({"name": "taken over"}),
        "POST /api/api-keys" => json!({"name": "stolen", "role": "admin"}),
        "POST /api/auth/create-tenant" => json!({"name": "Intruders"}),
        "POST /api/auth/invites" => json!({"role": "admin"}),
        "POST /api/auth/mfa/backup-codes/regenerate" | "POST /api/auth/mfa/disable" => json!({"password": PASSWORD}),
        "POST /api/auth/mfa/passkeys/register/finish" => json!({"response": {}}),
        "POST /api/auth/mfa/totp/confirm" => json!({"code": "123456"}),
        "POST /api/calibration/refresh" => json!({}),
        "POST /api/detections/:id/annotate" => json!({"vote": "confirm", "timeStartMs": 0, "timeEndMs": 1000}),
        "POST /api/detections/:id/comments" => json!({"body": "intruder was here"}),
        "POST /api/detections/:id/verify" => json!({"vote": "reject"}),
        "POST /api/satellites" => json!({"name": "intruder"}),
        "POST /api/satellites/:id/logs/request" => json!({"tail": 10}),
        "POST /api/satellites/:id/profile" => json!({"type": "dawn", "schedule": [], "sampleRate": 48000,
            "chunkDurationMs": 3000, "overlapMs": 0, "gain": 1.0}),
        "DELETE /api/auth/me" => json!({"password": PASSWORD}),
        "POST /api/satellites/:id/update" => json!({"targetVersion": "9.9.9"}),
        "POST /api/species/images" => json!({"codes": ["turdus_migratorius"]}),
        "POST /api/species/translate" => json!({"names": ["American Robin"], "lang": "de"}),
        "PUT /api/auth/me/password" => json!({"currentPassword": PASSWORD, "newPassword": "a-new-password-42"}),
        "PUT /api/auth/me/preferences" => json!({}),
        "PUT /api/auth/me/profile" => json!({"name": "Intruder"}),
        "PUT /api/satellites/:id/birdweather" => json!({"token": "intruder-token", "enabled": false}),
        "PUT /api/satellites/:id/config" => json!({"overrides": {}}),
        "PUT /api/satellites/:id/time-zone" => json!({"timeZone": "UTC"}),
        _ => return None,
    })
}

/// The answer of one route to one credential: the status (a WebSocket's is its handshake's).
async fn call(hub: &common::TestHub, route: &str, url_path: &str, token: Option<&str>, body: Body) -> StatusCode {
    let (method, _) = route.split_once(' ').expect("method");
    if route == "GET /api/ws/events" {
        use tokio_tungstenite::tungstenite::{Error, client::IntoClientRequest};
        let mut req = format!("ws://{}/api{url_path}", hub.http_addr).into_client_request().expect("request");
        if let Some(t) = token {
            req.headers_mut().insert("authorization", format!("Bearer {t}").parse().expect("header"));
        }
        return match tokio_tungstenite::connect_async(req).await {
            Ok(_) => StatusCode::SWITCHING_PROTOCOLS,
            Err(Error::Http(resp)) => resp.status(),
            Err(e) => panic!("websocket to {url_path}: {e}"),
        };
    }
    let client = reqwest::Client::new();
    let method = Method::from_bytes(method.as_bytes()).expect("method");
    let mut req = client.request(method.clone(), format!("{}/api{url_path}", hub.base_url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    match body {
        // Malformed on purpose: a credential that passes the guard gets 400 and nothing changes.
        Body::Malformed => req = req.header("content-type", "application/json").body("{\"malformed\": "),
        Body::Example(v) => req = req.json(&v),
        Body::None => {}
    }
    req.send().await.expect("request").status()
}

enum Body {
    None,
    Malformed,
    Example(Value),
}

fn refused(status: StatusCode) -> bool {
    matches!(status.as_u16(), 401 | 403 | 404)
}

#[tokio::test]
async fn every_route_answers_exactly_the_credentials_the_table_allows() {
    let hub = common::spawn_hub_with(|s| s.security.internal_api_key = Secret::new(INTERNAL_KEY)).await;
    let owner = hub.user("owner@example.org", false).await;
    let team = owner.tenant;
    hub.member_of("admin@example.org", team, Role::Admin).await;
    hub.member_of("member@example.org", team, Role::Member).await;
    let viewer = hub.member_of("viewer@example.org", team, Role::Viewer).await;
    hub.user("outsider@example.org", false).await;
    hub.user("root@example.org", true).await;

    let owner_api = hub.login(&owner.email).await;
    let member_api = hub.login("member@example.org").await;
    let key = |role: &'static str| {
        let api = owner_api.clone();
        async move {
            let (status, k) = api.post("/api-keys", json!({"name": format!("{role} key"), "role": role})).await;
            assert_eq!(status, 201, "{k}");
            (k["id"].as_str().expect("id").to_owned(), k["key"].as_str().expect("key").to_owned())
        }
    };
    let (_, viewer_key) = key("viewer").await;
    let (_, member_key) = key("member").await;
    let (_, admin_key) = key("admin").await;
    let (spare_key, _) = key("viewer").await;

    // The team's satellite, team-owned (its registrant left the row), so only admins manage it.
    let (status, sat) = owner_api.post("/satellites", json!({"name": "garden"})).await;
    assert_eq!(status, 201, "{sat}");
    let satellite = sat["id"].as_str().expect("id").to_owned();
    let satellite_key = sat["apiKey"].as_str().expect("apiKey").to_owned();
    let sat_id: birdhub::ids::SatelliteId = satellite.parse().expect("satellite id");
    let sat_text = satellite.clone();
    hub.sql(move |c| c.execute("UPDATE satellites SET registered_by = NULL WHERE id = ?1", [&sat_text]).expect("own"));
    let (chunk, detection) = seed::heard(&hub, team, sat_id, "2026-05-01T06:00:00.000Z", seed::WARBLER, 0.9).await;
    let (status, comment) =
        member_api.post(&format!("/detections/{detection}/comments"), json!({"body": "a fine warbler"})).await;
    assert_eq!(status, 201, "{comment}");
    let hook = owner_api
        .create(
            "/alert-rules/channels",
            json!({"type": "webhook", "name": "rx", "config": {"url": "http://127.0.0.1:9/x"}}),
        )
        .await;
    let rule = owner_api
        .create(
            "/alert-rules/rules",
            json!({"name": "Warblers", "trigger": "detection", "conditions": {"minConfidence": 0.5}, "channelIds": [hook["id"]]}),
        )
        .await;
    let scheduled = owner_api
        .create(
            "/exports/scheduled",
            json!({"name": "Weekly", "format": "csv", "filters": {"days": 7}, "cron": "0 6 * * 1",
                "timezone": "Europe/Berlin", "channelId": hook["id"]}),
        )
        .await;
    let invite = owner_api.create("/auth/invites", json!({"role": "member"})).await;
    let viewer_text = viewer.id.to_string();
    let membership: String = hub.sql(move |c| {
        c.query_row("SELECT id FROM memberships WHERE user_id = ?1", [&viewer_text], |r| r.get(0)).expect("membership")
    });
    let world = World {
        tenant: team.to_string(),
        satellite,
        detection: detection.to_string(),
        chunk: chunk.to_string(),
        comment: comment["id"].as_str().expect("comment id").to_owned(),
        channel: hook["id"].as_str().expect("channel id").to_owned(),
        rule: rule["id"].as_str().expect("rule id").to_owned(),
        scheduled: scheduled["id"].as_str().expect("export id").to_owned(),
        invite: invite["id"].as_str().expect("invite id").to_owned(),
        spare_key,
        viewer_user: viewer.id.to_string(),
        membership,
        species: seed::WARBLER.0,
    };

    let mut tokens: BTreeMap<Cred, Option<String>> = BTreeMap::new();
    tokens.insert(Cred::Anonymous, None);
    for (cred, email) in [
        (Cred::ViewerSession, "viewer@example.org"),
        (Cred::MemberSession, "member@example.org"),
        (Cred::AdminSession, "admin@example.org"),
        (Cred::OutsiderSession, "outsider@example.org"),
        (Cred::PlatformAdminSession, "root@example.org"),
    ] {
        tokens.insert(cred, Some(hub.token(email).await));
    }
    tokens.insert(Cred::ViewerKey, Some(viewer_key));
    tokens.insert(Cred::MemberKey, Some(member_key));
    tokens.insert(Cred::AdminKey, Some(admin_key));
    tokens.insert(Cred::SatelliteKey, Some(satellite_key));
    let now = birdhub::time::Timestamp(chrono::Utc::now());
    let (_, worker_key) =
        birdhub::usecases::worker_keys::mint(&hub.state().store, hub.state().mqtt.logins(), "worker", None, now)
            .await
            .expect("worker key");
    tokens.insert(Cred::WorkerKey, Some(worker_key));
    tokens.insert(Cred::Internal, Some(INTERNAL_KEY.to_owned()));
    assert_eq!(tokens.len(), CREDS.len());

    let table = table();
    let mut holes = BTreeSet::new();
    let mut lockouts = BTreeSet::new();
    for (route, json_body) in router_routes() {
        let row = table.get(&route).unwrap_or_else(|| panic!("{route} is missing from docs/security.md"));
        if row.access == Access::Public {
            continue;
        }
        let path = world.fill(&route);
        let is_read = route.starts_with("GET ");
        for cred in CREDS {
            let may = allowed(row.access, row.satellite_key, cred);
            // Writes are only tried with a malformed body, so an allowed credential changes nothing;
            // writes without a body are checked for refusals only.
            if may && !is_read && !json_body {
                continue;
            }
            let token = tokens[&cred].as_deref();
            let body = if json_body { Body::Malformed } else { Body::None };
            let mut status = call(&hub, &route, &path, token, body).await;
            if !may && json_body && matches!(status.as_u16(), 400 | 422) {
                let Some(valid) = example(&route) else {
                    holes.insert(format!("{route} reads its body before refusing {cred:?}: add an example body"));
                    continue;
                };
                status = call(&hub, &route, &path, token, Body::Example(valid)).await;
            }
            if !may && !refused(status) {
                holes.insert(format!("{route} answered {status} to {cred:?} ({:?} in the table)", row.access));
            }
            if may && matches!(status.as_u16(), 401 | 403) {
                lockouts.insert(format!("{route} refused {cred:?} with {status} ({:?} in the table)", row.access));
            }
        }
    }
    assert!(
        holes.is_empty() && lockouts.is_empty(),
        "credentials reach routes docs/security.md does not allow them: {holes:#?}\n\
         routes refuse credentials docs/security.md allows: {lockouts:#?}"
    );
    // The credentials were still good at the end: nothing above revoked or deleted them.
    for (cred, email) in [(Cred::ViewerSession, "viewer@example.org"), (Cred::AdminSession, "admin@example.org")] {
        let api = common::Api::with_bearer(&hub.base_url, tokens[&cred].as_deref().expect("token"));
        let (status, me) = api.get("/auth/me").await;
        assert_eq!((status.as_u16(), me["user"]["email"].as_str()), (200, Some(email)), "{cred:?}");
    }
}
