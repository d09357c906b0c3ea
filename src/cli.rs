//! The command line. Every subcommand resolves `Settings` the same way, then does one thing.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, time::Duration};

use anyhow::Context;
use clap::{Parser, Subcommand};

use crate::{
    app,
    auth::password,
    config::{CliOverrides, EXAMPLE_CONFIG, Mode, Settings, Sources},
    store::{self, Store},
};

#[derive(Debug, Parser)]
#[command(name = "birdhub", version, about = "The hub of a bird-sound network")]
pub struct Cli {
    /// Config file (default: /etc/birdhub/birdhub.toml when it exists).
    #[arg(long, global = true, env = "BIRDHUB_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Data directory (database, audio, secrets).
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Log filter, e.g. `info` or `birdhub=debug`.
    #[arg(long, global = true, value_name = "FILTER")]
    pub log_level: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the hub.
    Serve {
        /// HTTP address, e.g. 0.0.0.0:8080 (127.0.0.1:0 picks a free port).
        #[arg(long, value_name = "ADDR")]
        http_bind: Option<SocketAddr>,
        /// MQTT TCP address, e.g. 0.0.0.0:1883.
        #[arg(long, value_name = "ADDR")]
        mqtt_bind: Option<SocketAddr>,
        /// Which parts to run.
        #[arg(long, value_enum)]
        mode: Option<Mode>,
    },
    /// Print the documented example configuration (all defaults).
    DefaultConfig,
    /// Apply database migrations and exit.
    Migrate,
    /// Administration tasks.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Exit 0 when the local hub answers its health check.
    Healthcheck {
        /// Health URL (default: derived from http.bind).
        #[arg(long)]
        url: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create an account with a team of its own. The first account on a hub is a platform admin.
    CreateUser {
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: String,
        /// Password (10+ characters). Omit it to have one generated and printed once.
        #[arg(long)]
        password: Option<String>,
        /// Make the account a platform admin.
        #[arg(long)]
        platform_admin: bool,
    },
}

/// Runs the parsed command line; the process exit code reflects the outcome.
pub fn main(cli: Cli) -> ExitCode {
    if matches!(cli.command, Command::DefaultConfig) {
        print!("{EXAMPLE_CONFIG}");
        return ExitCode::SUCCESS;
    }
    let serving = matches!(cli.command, Command::Serve { .. });
    let mut overrides =
        CliOverrides { data_dir: cli.data_dir.clone(), log_level: cli.log_level.clone(), ..Default::default() };
    if let Command::Serve { http_bind, mqtt_bind, mode } = &cli.command {
        overrides.http_bind = *http_bind;
        overrides.mqtt_bind = *mqtt_bind;
        overrides.mode = *mode;
    }
    let settings = match Settings::load(&Sources::from_process(cli.config.clone(), overrides)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("birdhub: {e}");
            return ExitCode::from(2);
        }
    };
    init_tracing(if serving || cli.log_level.is_some() { &settings.log_level } else { "warn" });

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("birdhub: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(cli.command, settings)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("birdhub: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr).try_init();
}

async fn dispatch(command: Command, settings: Settings) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve { .. } => app::run(settings).await.map(|()| ExitCode::SUCCESS),
        Command::DefaultConfig => unreachable!("handled before settings are loaded"),
        Command::Migrate => migrate(&settings).await,
        Command::Admin(AdminCommand::CreateUser { email, name, password, platform_admin }) => {
            create_user(&settings, email, name, password, platform_admin).await
        }
        Command::Healthcheck { url } => healthcheck(&settings, url).await,
    }
}

async fn open_store(settings: &Settings) -> anyhow::Result<(Store, store::migrate::Report)> {
    let dir = &settings.data_dir;
    std::fs::create_dir_all(dir).with_context(|| format!("creating data dir {}", dir.display()))?;
    let store = Store::open(&dir.join("birdhub.db"))?;
    let report = store.migrate().await?;
    Ok((store, report))
}

async fn migrate(settings: &Settings) -> anyhow::Result<ExitCode> {
    let (_, report) = open_store(settings).await?;
    if report.applied.is_empty() {
        println!("database is up to date at schema version {}", report.to);
    } else {
        println!("migrated from schema version {} to {}: {}", report.from, report.to, report.applied.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

async fn create_user(
    settings: &Settings,
    email: String,
    name: String,
    given_password: Option<String>,
    platform_admin: bool,
) -> anyhow::Result<ExitCode> {
    let email = email.trim().to_owned();
    let name = name.trim().to_owned();
    if !looks_like_email(&email) {
        anyhow::bail!("{email:?} is not an email address");
    }
    if name.is_empty() || name.chars().count() > 100 {
        anyhow::bail!("the name must be 1 to 100 characters");
    }
    if let Some(p) = &given_password {
        password::check_strength(p)?;
    }
    let (store, _) = open_store(settings).await?;
    let first = store.call(|c| store::users::count(c)).await? == 0;
    let shown = given_password.is_none();
    let plain = given_password.unwrap_or_else(password::generate);
    let hash = tokio::task::spawn_blocking(move || password::hash(&plain).map(|h| (h, plain))).await??;
    let new = store::users::NewUser {
        email: email.clone(),
        name: name.clone(),
        password_hash: hash.0,
        is_platform_admin: platform_admin || first,
    };
    let team = format!("{name}'s team");
    let team_for_store = team.clone();
    let created = match store.call(move |c| store::users::create_with_team(c, &new, &team_for_store)).await {
        Err(store::Error::Conflict(_)) => anyhow::bail!("a user with email {email} already exists"),
        other => other?,
    };
    let role = if platform_admin || first { " (platform admin)" } else { "" };
    println!("created user {email}{role} with the team {team:?}");
    println!("user id:   {}", created.user_id);
    println!("team id:   {}", created.tenant_id);
    if shown {
        println!("password:  {}   (shown once; change it after logging in)", hash.1);
    }
    let addr = settings.local_http_addr();
    println!("log in at http://{addr}/ or POST http://{addr}/api/auth/login");
    Ok(ExitCode::SUCCESS)
}

/// A plausibility check, not RFC 5322: one `@`, something before it, a dot in the domain, no spaces.
pub fn looks_like_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else { return false };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains('@')
        && s.len() <= 254
        && !s.chars().any(char::is_whitespace)
}

async fn healthcheck(settings: &Settings, url: Option<String>) -> anyhow::Result<ExitCode> {
    let url = url.unwrap_or_else(|| format!("http://{}/api/health", settings.local_http_addr()));
    let client = reqwest::Client::builder().timeout(Duration::from_secs(5)).build()?;
    let resp = match client.get(&url).send().await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("birdhub: no answer from {url}: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let status = resp.status();
    let body = resp.text().await.unwrap_or_default();
    println!("{body}");
    let ok = status.is_success()
        && serde_json::from_str::<serde_json::Value>(&body).ok().and_then(|v| v["status"].as_str().map(|s| s == "ok"))
            == Some(true);
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
