//! `birdhub satellite register`: find the hub (mDNS when no `--hub` is given), log in (email and
//! password, then a TOTP code when the account has MFA; or an API key), register this machine
//! by its stable device id (`POST /api/satellites`, SPEC 4.4) and save the MQTT credentials and
//! the satellite API key in the satellite's config file with mode 0600.
//!
//! Running it again re-registers the same device (same id, registration rule 3): the hub mints
//! new credentials and the old ones stop working, so it is also how credentials are rotated.
//! The capture settings of an existing config file are kept unless flags change them.

use std::{io::IsTerminal, path::Path, time::Duration};

use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::settings::{SatelliteSettings, defaults_for};

/// Everything `register` needs; the CLI fills it from flags, the environment and prompts.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub hub: Option<String>,
    pub instance: Option<String>,
    pub name: Option<String>,
    pub email: Option<String>,
    pub password: Option<String>,
    pub totp: Option<String>,
    pub api_key: Option<String>,
    pub tenant_id: Option<uuid::Uuid>,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
}

/// The hub's base URL (no `/api`): the one given, else the only hub mDNS finds.
pub async fn find_hub(given: Option<&str>) -> anyhow::Result<String> {
    if let Some(url) = given {
        let url = url.trim_end_matches('/').trim_end_matches("/api").to_owned();
        url::Url::parse(&url).with_context(|| format!("--hub {url:?} is not a URL like http://192.168.1.20:8080"))?;
        return Ok(url);
    }
    eprintln!("Looking for a hub on the LAN (mDNS, 5 s)...");
    let found = tokio::task::spawn_blocking(|| crate::mdns::discover(Duration::from_secs(5))).await?;
    match found.as_slice() {
        [] => bail!("no birdhub hub answered on the LAN; pass --hub http://HUB-ADDRESS:8080"),
        [one] => {
            eprintln!("Found {} at {}", one.name, one.http_url);
            Ok(one.http_url.clone())
        }
        many => {
            let list: Vec<String> = many.iter().map(|h| format!("  {} ({})", h.http_url, h.name)).collect();
            bail!("several hubs answered; choose one with --hub:\n{}", list.join("\n"))
        }
    }
}

/// A device id that stays the same on this machine: derived from `/etc/machine-id` (hashed, so
/// the machine id itself never leaves the device), with the instance name appended.
pub fn device_id(instance: Option<&str>) -> String {
    let machine = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok().filter(|s| !s.trim().is_empty()));
    let base = match machine {
        Some(m) => {
            let digest = Sha256::digest(format!("birdhub-satellite:{}", m.trim()).as_bytes());
            format!("pi-{}", &hex::encode(digest)[..16])
        }
        None => format!("pi-{}", &uuid::Uuid::new_v4().simple().to_string()[..16]),
    };
    match instance {
        Some(i) => format!("{base}-{i}"),
        None => base,
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "satellite".into())
}

/// What the hub answered: enough to fill the settings.
#[derive(Debug, Clone)]
pub struct Registered {
    pub satellite_id: uuid::Uuid,
    pub tenant_id: uuid::Uuid,
    pub name: String,
    pub mqtt_password: String,
    pub broker_url: String,
    pub topic_prefix: String,
    pub api_key: String,
    pub created: bool,
}

/// Logs in (or uses the API key) and registers; `device_id` is sent as given.
pub async fn register(hub: &str, req: &Request, device_id: &str, name: &str) -> anyhow::Result<Registered> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(20)).build()?;
    let api = format!("{hub}/api");
    let token = match &req.api_key {
        Some(k) => k.clone(),
        None => login(&http, &api, req).await?,
    };
    let body = json!({
        "name": name,
        "deviceId": device_id,
        "kind": "satellite",
        "latitude": req.latitude,
        "longitude": req.longitude,
        "tenantId": req.tenant_id,
    });
    let resp = http
        .post(format!("{api}/satellites"))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .await
        .with_context(|| format!("cannot reach the hub at {hub}"))?;
    let status = resp.status();
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        bail!("the hub refused the registration ({status}): {}", hub_error(&v));
    }
    let text = |p: &str| {
        v.pointer(p).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| anyhow!("the hub's answer lacks {p}"))
    };
    let uuid_at = |p: &str| -> anyhow::Result<uuid::Uuid> { Ok(uuid::Uuid::parse_str(&text(p)?)?) };
    Ok(Registered {
        satellite_id: uuid_at("/id")?,
        tenant_id: uuid_at("/tenantId")?,
        name: text("/name")?,
        mqtt_password: text("/mqtt/password")?,
        broker_url: text("/mqtt/brokerUrl")?,
        topic_prefix: text("/mqtt/topicPrefix")?,
        api_key: text("/apiKey")?,
        created: status == reqwest::StatusCode::CREATED,
    })
}

fn hub_error(v: &Value) -> String {
    match (v.get("code").and_then(Value::as_str), v.get("message").and_then(Value::as_str)) {
        (Some(c), Some(m)) => format!("{m} [{c}]"),
        _ => v.to_string(),
    }
}

async fn login(http: &reqwest::Client, api: &str, req: &Request) -> anyhow::Result<String> {
    let email = match &req.email {
        Some(e) => e.clone(),
        None => prompt("Email: ", false, "--email", "BIRDHUB_EMAIL")?,
    };
    let password = match &req.password {
        Some(p) => p.clone(),
        None => prompt("Password: ", true, "--password", "BIRDHUB_PASSWORD")?,
    };
    let resp = http
        .post(format!("{api}/auth/login"))
        .json(&json!({"email": email, "password": password}))
        .send()
        .await
        .with_context(|| format!("cannot reach the hub at {api}"))?;
    let status = resp.status();
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        bail!("login failed ({status}): {}", hub_error(&v));
    }
    if let Some(t) = v.get("token").and_then(Value::as_str) {
        return Ok(t.to_owned());
    }
    let Some(mfa_token) = v.get("mfaToken").and_then(Value::as_str) else {
        bail!("the hub answered the login without a token");
    };
    let code = match &req.totp {
        Some(c) => c.clone(),
        None => prompt("Authenticator code: ", false, "--totp", "BIRDHUB_TOTP")?,
    };
    let resp = http
        .post(format!("{api}/auth/login/mfa/totp"))
        .json(&json!({"mfaToken": mfa_token, "code": code}))
        .send()
        .await?;
    let status = resp.status();
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    match v.get("token").and_then(Value::as_str) {
        Some(t) if status.is_success() => Ok(t.to_owned()),
        _ => bail!("the second factor was refused ({status}): {}", hub_error(&v)),
    }
}

/// Reads one line from the terminal, without echo for secrets. Without a terminal, says which
/// flag or environment variable gives the value instead.
fn prompt(label: &str, secret: bool, flag: &str, env: &str) -> anyhow::Result<String> {
    use std::io::Write;
    if !std::io::stdin().is_terminal() {
        bail!(
            "the {} is needed and there is no terminal to ask for it on: pass {flag} or set {env}",
            label.trim_end_matches([' ', ':']).to_lowercase()
        );
    }
    eprint!("{label}");
    std::io::stderr().flush()?;
    let stty = |arg: &str| std::process::Command::new("stty").arg(arg).stdin(std::process::Stdio::inherit()).status();
    if secret {
        let _ = stty("-echo");
    }
    let mut line = String::new();
    let read = std::io::stdin().read_line(&mut line);
    if secret {
        let _ = stty("echo");
        eprintln!();
    }
    read?;
    Ok(line.trim().to_owned())
}

/// Where to dial the broker: the host of `brokerUrl` when it resolves here, else the host this
/// satellite reached the hub at (a hub's own name often does not resolve on the LAN).
pub async fn broker_address(broker_url: &str, hub: &str) -> anyhow::Result<(String, u16)> {
    let url = url::Url::parse(broker_url).with_context(|| format!("the hub's brokerUrl {broker_url:?}"))?;
    if url.scheme() != "mqtt" && url.scheme() != "tcp" {
        bail!(
            "the hub hands out {broker_url}; this satellite speaks plain MQTT on the LAN (mqtt://), \
             so leave the hub's mqtt.public_url empty or set it to an mqtt:// address"
        );
    }
    let port = url.port().unwrap_or(1883);
    let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']).to_owned();
    Ok((dialable_host(&host, port, hub).await, port))
}

/// `host` when it resolves here, else the host of `hub` (the address this satellite reaches the
/// hub at): a hub's own `NAME.local` often does not resolve on the LAN, or in a container.
pub async fn dialable_host(host: &str, port: u16, hub: &str) -> String {
    if !host.is_empty() && tokio::net::lookup_host((host, port)).await.is_ok_and(|mut a| a.next().is_some()) {
        return host.to_owned();
    }
    let Some(hub_host) =
        url::Url::parse(hub).ok().and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_owned()))
    else {
        return host.to_owned();
    };
    if hub_host != host {
        eprintln!("The broker's host {host} does not resolve here; using {hub_host}");
        tracing::warn!(broker = %host, using = %hub_host, "the broker's host does not resolve here; using the hub's");
    }
    hub_host
}

/// The settings to save: the previous file's capture choices, the new identity and secrets.
pub fn settings(
    previous: Option<SatelliteSettings>,
    instance: Option<&str>,
    hub: &str,
    reg: &Registered,
    device_id: &str,
    broker: (String, u16),
    position: (Option<f64>, Option<f64>),
) -> SatelliteSettings {
    let mut s = previous.unwrap_or_else(|| fresh(instance));
    s.hub_url = hub.to_owned();
    (s.mqtt_host, s.mqtt_port) = broker;
    s.satellite_id = reg.satellite_id;
    s.tenant_id = reg.tenant_id;
    s.name = reg.name.clone();
    s.device_id = device_id.to_owned();
    s.mqtt_password = reg.mqtt_password.clone();
    s.api_key = reg.api_key.clone();
    s.topic_root = reg.topic_prefix.split('/').next().unwrap_or("birdhub").to_owned();
    if position.0.is_some() {
        (s.latitude, s.longitude) = position;
    }
    s
}

/// The default name of a new satellite: the host name, plus the instance.
pub fn default_name(instance: Option<&str>) -> String {
    match instance {
        Some(i) => format!("{}-{i}", hostname()),
        None => hostname(),
    }
}

/// Loads the previous config, if the file exists.
pub fn previous(path: &Path) -> anyhow::Result<Option<SatelliteSettings>> {
    if !path.exists() {
        return Ok(None);
    }
    SatelliteSettings::load(path).map(Some)
}

/// A new satellite's settings before registration fills in the identity: the default ALSA
/// microphone and the defaults of [`defaults_for`] (data dir, journal unit, apt updates).
pub fn fresh(instance: Option<&str>) -> SatelliteSettings {
    let d = defaults_for(instance);
    SatelliteSettings {
        hub_url: String::new(),
        mqtt_host: String::new(),
        mqtt_port: 1883,
        satellite_id: uuid::Uuid::nil(),
        tenant_id: uuid::Uuid::nil(),
        name: String::new(),
        device_id: String::new(),
        mqtt_password: String::new(),
        api_key: String::new(),
        source: "alsa:default".into(),
        pace: Default::default(),
        loop_dir: false,
        latitude: None,
        longitude: None,
        data_dir: d.data_dir,
        model_dir: None,
        update_command: d.update_command,
        version_command: d.version_command,
        log_file: None,
        unit: d.unit,
        resend_per_sec: d.resend_per_sec,
        max_attempts: d.max_attempts,
        topic_root: "birdhub".into(),
        require_clock_sync: true,
        clock_sync_command: String::new(),
    }
}
