//! `birdhub satellite register|run|status`: the recording satellite's command line. The global
//! `--config` names the satellite's config file here (default `/etc/birdhub/satellite.toml`, or
//! `satellite-NAME.toml` with `--instance NAME`), and `--data-dir` its data directory.

use std::{path::PathBuf, process::ExitCode};

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::satellite::{
    capture::{Pace, Source},
    outbox::Outbox,
    register::{self, Request},
    settings::SatelliteSettings,
};

#[derive(Debug, Subcommand)]
pub enum SatelliteCommand {
    /// Register this machine with a hub (found on the LAN by mDNS without --hub) and save the
    /// credentials. Running it again rotates them.
    Register(Box<RegisterArgs>),
    /// Record and send chunks to the hub until stopped (what birdhub-satellite.service runs).
    Run(InstanceArg),
    /// Print the outbox and filter counters of this satellite.
    Status(InstanceArg),
}

#[derive(Debug, Args)]
pub struct InstanceArg {
    /// A second microphone on the same machine is its own satellite, config and outbox.
    #[arg(long, value_name = "NAME")]
    pub instance: Option<String>,
}

#[derive(Debug, Args)]
pub struct RegisterArgs {
    #[command(flatten)]
    pub instance: InstanceArg,
    /// The hub, e.g. http://192.168.1.20:8080 (default: found on the LAN by mDNS).
    #[arg(long, value_name = "URL")]
    pub hub: Option<String>,
    /// The satellite's name on the hub (default: the host name, plus the instance).
    #[arg(long)]
    pub name: Option<String>,
    /// Log in with this email (asked when omitted and there is no --api-key).
    #[arg(long, env = "BIRDHUB_EMAIL")]
    pub email: Option<String>,
    /// The password (asked without echo when omitted and there is a terminal). Prefer the
    /// environment variable: a flag shows in the process list.
    #[arg(long, env = "BIRDHUB_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// A TOTP code when the account has two-factor login (asked when needed).
    #[arg(long, env = "BIRDHUB_TOTP")]
    pub totp: Option<String>,
    /// A team API key instead of logging in.
    #[arg(long, env = "BIRDHUB_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// The team to register in (default: your default team).
    #[arg(long)]
    pub tenant_id: Option<uuid::Uuid>,
    /// Where the microphone is (for the sunrise/sunset schedule and the hub's map).
    #[arg(long, requires = "lon", allow_hyphen_values = true)]
    pub lat: Option<f64>,
    #[arg(long, requires = "lat", allow_hyphen_values = true)]
    pub lon: Option<f64>,
    /// `alsa:DEVICE` (default alsa:default), `dir:PATH` (a folder of recordings) or `rtsp:URL`.
    #[arg(long)]
    pub source: Option<String>,
    /// How a dir: source is read: realtime (default) or fast.
    #[arg(long, value_enum)]
    pub pace: Option<Pace>,
    /// Read a dir: source again from the start after the last file.
    #[arg(long)]
    pub loop_dir: bool,
    /// The classifier gate's model directory (default: none, RMS gate only).
    #[arg(long)]
    pub model_dir: Option<String>,
    /// Run on an `update` from the hub (BIRDHUB_TARGET_VERSION is set).
    #[arg(long)]
    pub update_command: Option<String>,
    /// Prints the installed version.
    #[arg(long)]
    pub version_command: Option<String>,
    /// Answer log requests from this file instead of the journal.
    #[arg(long)]
    pub log_file: Option<PathBuf>,
    /// Chunks sent per second at most (the backlog after a reconnect drains at this rate).
    #[arg(long)]
    pub resend_per_sec: Option<u32>,
}

/// Runs a satellite command; `config` and `data_dir` are the global flags.
pub async fn dispatch(
    cmd: SatelliteCommand,
    config: Option<PathBuf>,
    data_dir: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let instance = match &cmd {
        SatelliteCommand::Register(a) => a.instance.instance.clone(),
        SatelliteCommand::Run(a) | SatelliteCommand::Status(a) => a.instance.clone(),
    };
    if let Some(i) = &instance {
        crate::satellite::settings::validate_instance(i).map_err(|e| anyhow::anyhow!("--instance: {e}"))?;
    }
    let path = config.unwrap_or_else(|| SatelliteSettings::default_path(instance.as_deref()));
    match cmd {
        SatelliteCommand::Register(args) => register_cmd(*args, &path, data_dir).await,
        SatelliteCommand::Run(_) => {
            let settings = load(&path, data_dir)?;
            let shutdown = tokio_util::sync::CancellationToken::new();
            let stop = shutdown.clone();
            tokio::spawn(async move {
                crate::app::shutdown_signal().await;
                stop.cancel();
            });
            crate::satellite::run::run(settings, shutdown).await?;
            Ok(ExitCode::SUCCESS)
        }
        SatelliteCommand::Status(_) => {
            let s = load(&path, data_dir)?;
            let dir = s.data_dir.join("outbox");
            let mut ob = Outbox::open(
                &dir,
                crate::satellite::outbox::Caps { soft_mb: u32::MAX, hard_mb: u32::MAX, max_age_hours: u32::MAX },
                s.max_attempts,
            )?;
            let out = serde_json::json!({
                "satelliteId": s.satellite_id, "name": s.name, "hub": s.hub_url, "source": s.source,
                "outboxStats": ob.stats()?, "failedCount": ob.failed_count()?, "filterStats": ob.filter_stats()?,
            });
            println!("{}", serde_json::to_string_pretty(&out)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn load(path: &std::path::Path, data_dir: Option<PathBuf>) -> anyhow::Result<SatelliteSettings> {
    let mut s = SatelliteSettings::load(path).with_context(|| {
        format!("no satellite config at {}: run `birdhub satellite register` first", path.display())
    })?;
    if let Some(d) = data_dir {
        s.data_dir = d;
    }
    Ok(s)
}

async fn register_cmd(a: RegisterArgs, path: &std::path::Path, data_dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    if let Some(src) = &a.source {
        src.parse::<Source>().map_err(|e| anyhow::anyhow!("--source: {e}"))?;
    }
    let instance = a.instance.instance.as_deref();
    let previous = register::previous(path)?;
    let hub = register::find_hub(a.hub.as_deref()).await?;
    let device_id = previous
        .as_ref()
        .map(|p| p.device_id.clone())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| register::device_id(instance));
    let name = a
        .name
        .clone()
        .or_else(|| previous.as_ref().map(|p| p.name.clone()))
        .unwrap_or_else(|| register::default_name(instance));
    let req = Request {
        hub: Some(hub.clone()),
        instance: a.instance.instance.clone(),
        name: Some(name.clone()),
        email: a.email,
        password: a.password,
        totp: a.totp,
        api_key: a.api_key,
        tenant_id: a.tenant_id,
        latitude: a.lat.or(previous.as_ref().and_then(|p| p.latitude)),
        longitude: a.lon.or(previous.as_ref().and_then(|p| p.longitude)),
    };
    let reg = register::register(&hub, &req, &device_id, &name).await?;
    let broker = register::broker_address(&reg.broker_url, &hub).await?;
    let mut s = register::settings(previous, instance, &hub, &reg, &device_id, broker, (a.lat, a.lon));
    if let Some(v) = a.source {
        s.source = v;
    }
    if let Some(v) = a.pace {
        s.pace = v;
    }
    if a.loop_dir {
        s.loop_dir = true;
    }
    if let Some(v) = a.model_dir {
        s.model_dir = Some(v);
    }
    if let Some(v) = a.update_command {
        s.update_command = v;
    }
    if let Some(v) = a.version_command {
        s.version_command = v;
    }
    if let Some(v) = a.log_file {
        s.log_file = Some(v);
    }
    if let Some(v) = a.resend_per_sec {
        s.resend_per_sec = v.max(1);
    }
    if let Some(v) = data_dir {
        s.data_dir = v;
    }
    s.save(path).with_context(|| format!("saving {}", path.display()))?;
    let unit = match instance {
        Some(i) => format!("birdhub-satellite@{i}"),
        None => "birdhub-satellite".into(),
    };
    println!(
        "{} satellite {:?} ({}) on {hub}.\nCredentials saved to {} (mode 0600).\nStart it: sudo systemctl enable --now {unit}",
        if reg.created { "Registered" } else { "Re-registered (new credentials; the old ones no longer work)" },
        s.name,
        s.satellite_id,
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}
