//! Merging the configuration layers into one `Settings`.
//!
//! Each layer is turned into a TOML table and deep-merged over the one below; the result is
//! deserialized once, so every layer gets the same type checks and error messages naming the key.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
};

use toml::{Table, Value};

use super::{Mode, SYSTEM_CONFIG_PATH, SYSTEM_DATA_DIR, Settings};

/// A configuration problem, always naming the file, variable or key at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {path}: {message}")]
    File { path: PathBuf, message: String },
    #[error("environment variable {name}: {message}")]
    Env { name: String, message: String },
    #[error("config key `{key}`: {message}")]
    Invalid { key: String, message: String },
}

/// Values given on the command line; `None` leaves the lower layers in charge.
#[derive(Debug, Clone, Default)]
pub struct CliOverrides {
    pub data_dir: Option<PathBuf>,
    pub http_bind: Option<SocketAddr>,
    pub mqtt_bind: Option<SocketAddr>,
    pub mode: Option<Mode>,
    pub log_level: Option<String>,
}

/// Where settings come from. Tests build this by hand instead of touching the process environment.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// `--config PATH`: must exist.
    pub config_file: Option<PathBuf>,
    /// Read only when it exists (the system-wide file); ignored when `config_file` is set.
    pub system_config: Option<PathBuf>,
    /// Environment variables as (name, value).
    pub env: Vec<(String, String)>,
    pub cli: CliOverrides,
}

impl Sources {
    /// The real process: `/etc/birdhub/birdhub.toml` (if present), the environment, and the flags.
    pub fn from_process(config_file: Option<PathBuf>, cli: CliOverrides) -> Self {
        Self {
            config_file,
            system_config: Some(PathBuf::from(SYSTEM_CONFIG_PATH)),
            env: std::env::vars().collect(),
            cli,
        }
    }
}

/// The SPEC's own variable names and the keys they set.
const SPEC_ENV: &[(&str, &str)] = &[
    ("MFA_ENCRYPTION_KEY", "security.mfa_encryption_key"),
    ("HUB_INTERNAL_API_KEY", "security.internal_api_key"),
    ("SMTP_HOST", "smtp.host"),
    ("LIVE_AUDIO_TIMEOUT_MS", "live_audio.timeout_ms"),
];

/// `BIRDHUB_*` variables that are not settings (used by the CLI and the scripts).
const NOT_SETTINGS: &[&str] = &["BIRDHUB_CONFIG", "BIRDHUB_CACHE", crate::process_memory::MARKER];

pub(super) fn load(sources: &Sources) -> Result<Settings, ConfigError> {
    let file = sources
        .config_file
        .as_deref()
        .map(|p| (p, true))
        .or_else(|| sources.system_config.as_deref().filter(|p| p.exists()).map(|p| (p, false)));
    let mut defaults = Settings::default();
    // Under systemd `StateDirectory=birdhub` names the data dir (/var/lib/birdhub). An installed
    // hub's own commands (`sudo -u birdhub birdhub admin …`, the package scripts) read the system
    // config and so default to the same directory.
    let state_dir = sources.env.iter().find(|(k, _)| k == "STATE_DIRECTORY").map(|(_, v)| v.as_str());
    if let Some(first) = state_dir.and_then(|d| d.split(':').next()).filter(|d| !d.is_empty()) {
        defaults.data_dir = PathBuf::from(first);
    } else if matches!(file, Some((_, false))) {
        defaults.data_dir = PathBuf::from(SYSTEM_DATA_DIR);
    }
    let defaults = match Value::try_from(&defaults) {
        Ok(Value::Table(t)) => t,
        _ => unreachable!("Settings always serializes to a table"),
    };
    // What the file, the environment and the flags set, over the defaults.
    let mut given = Table::new();
    if let Some((path, _)) = file {
        merge(&mut given, read_file(path)?);
    }
    merge(&mut given, env_layer(&sources.env, &defaults)?);
    merge(&mut given, cli_layer(&sources.cli));
    let mut merged = defaults;
    merge(&mut merged, given.clone());

    let mut settings: Settings = serde_path_to_error::deserialize(Value::Table(merged)).map_err(|e| {
        let key = e.path().to_string();
        ConfigError::Invalid { key, message: e.into_inner().to_string() }
    })?;
    // A hub told where MQTT listens (`--mqtt-bind 127.0.0.1:1883`) keeps its MQTT WebSocket on
    // the same address, unless `mqtt.ws_bind` is set on its own.
    if lookup(&given, &["mqtt", "bind"]).is_some() && lookup(&given, &["mqtt", "ws_bind"]).is_none() {
        settings.mqtt.ws_bind.set_ip(settings.mqtt.bind.ip());
    }
    settings.validate()?;
    Ok(settings)
}

fn read_file(path: &Path) -> Result<Table, ConfigError> {
    let err = |message: String| ConfigError::File { path: path.to_owned(), message };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    text.parse::<Table>().map_err(|e| err(e.to_string()))
}

fn env_layer(env: &[(String, String)], defaults: &Table) -> Result<Table, ConfigError> {
    let mut layer = Table::new();
    // SPEC names first, so the more specific BIRDHUB_* form wins when both are set.
    let spec = SPEC_ENV
        .iter()
        .filter_map(|(name, key)| env.iter().find(|(k, _)| k == name).map(|(k, v)| (k.clone(), key.to_string(), v)));
    let ours = env.iter().filter_map(|(k, v)| {
        let rest = k.strip_prefix("BIRDHUB_")?;
        if NOT_SETTINGS.contains(&k.as_str()) {
            return None;
        }
        Some((k.clone(), rest.to_lowercase().replace("__", "."), v))
    });
    for (name, key, raw) in spec.chain(ours) {
        let path: Vec<&str> = key.split('.').collect();
        let Some(default) = lookup(defaults, &path) else {
            return Err(ConfigError::Env { name, message: format!("`{key}` is not a setting") });
        };
        let value = typed(default, raw).map_err(|message| ConfigError::Env { name: name.clone(), message })?;
        set(&mut layer, &path, value);
    }
    Ok(layer)
}

/// Parses an environment string as the type of the setting's default value.
fn typed(default: &Value, raw: &str) -> Result<Value, String> {
    let raw = raw.trim();
    match default {
        Value::String(_) => Ok(Value::String(raw.to_owned())),
        Value::Integer(_) => {
            raw.parse().map(Value::Integer).map_err(|_| format!("expected a whole number, got {raw:?}"))
        }
        Value::Float(_) => raw.parse().map(Value::Float).map_err(|_| format!("expected a number, got {raw:?}")),
        Value::Boolean(_) => match raw.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(Value::Boolean(true)),
            "false" | "0" | "no" | "off" => Ok(Value::Boolean(false)),
            _ => Err(format!("expected true or false, got {raw:?}")),
        },
        // A list as comma-separated items: `BIRDHUB_METRICS__ALLOW=127.0.0.1,10.0.0.0/8`.
        Value::Array(_) => Ok(Value::Array(
            raw.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| Value::String(s.to_owned())).collect(),
        )),
        _ => Err("this setting is a section; set its keys instead".into()),
    }
}

fn cli_layer(cli: &CliOverrides) -> Table {
    let mut layer = Table::new();
    let mut put = |path: &[&str], v: Option<String>| {
        if let Some(v) = v {
            set(&mut layer, path, Value::String(v));
        }
    };
    put(&["data_dir"], cli.data_dir.as_ref().map(|p| p.display().to_string()));
    put(&["http", "bind"], cli.http_bind.map(|a| a.to_string()));
    put(&["mqtt", "bind"], cli.mqtt_bind.map(|a| a.to_string()));
    put(&["log_level"], cli.log_level.clone());
    put(
        &["mode"],
        cli.mode.map(|m| match m {
            Mode::Full => "full".into(),
            Mode::Dispatcher => "dispatcher".into(),
            Mode::Api => "api".into(),
        }),
    );
    layer
}

fn lookup<'a>(table: &'a Table, path: &[&str]) -> Option<&'a Value> {
    let (last, parents) = path.split_last()?;
    let mut t = table;
    for p in parents {
        t = t.get(*p)?.as_table()?;
    }
    t.get(*last)
}

fn set(table: &mut Table, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut t = table;
    for p in parents {
        let entry = t.entry(p.to_string()).or_insert_with(|| Value::Table(Table::new()));
        if !entry.is_table() {
            *entry = Value::Table(Table::new());
        }
        let Value::Table(inner) = entry else { unreachable!("just made a table") };
        t = inner;
    }
    t.insert(last.to_string(), value);
}

/// Deep merge: tables merge key by key, anything else replaces.
fn merge(base: &mut Table, over: Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}
