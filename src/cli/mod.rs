//! The command line. Every subcommand resolves `Settings` the same way, then does one thing.
//! The bodies live in one file per group: `admin.rs` (migrate, create-user, healthcheck),
//! `backup.rs` (admin backup and restore),
//! `classify.rs`, `bench.rs` (and `bench_*.rs`, one per benchmark) and `model.rs`.

mod admin;
mod backup;
mod bench;
mod bench_alerts;
mod bench_api;
mod bench_api_pages;
mod bench_api_seed;
mod bench_api_stats;
mod bench_api_time;
mod bench_auth;
mod bench_bare;
mod bench_cores;
mod bench_export;
mod bench_fleet;
mod bench_import;
mod bench_memory;
mod bench_pipeline;
mod bench_quality;
mod bench_quality_score;
mod bench_quality_set;
mod bench_satellites;
mod bench_sql;
mod bench_workers;
mod bench_zones;
mod classify;
mod import;
mod integrations;
mod model;
mod satellite;
mod worker;

use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};

use crate::{
    app,
    config::{CliOverrides, EXAMPLE_CONFIG, Mode, Settings, Sources},
};

#[derive(Debug, Parser)]
#[command(name = "birdhub", version, about = "The hub of a bird-sound network")]
pub struct Cli {
    /// Config file: the hub's (default: /etc/birdhub/birdhub.toml when it exists), or under
    /// `birdhub satellite` the satellite's own (default: /etc/birdhub/satellite.toml).
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
        /// MQTT TCP address, e.g. 0.0.0.0:1883. The MQTT WebSocket (port 8083) listens on the same
        /// address unless mqtt.ws_bind is set.
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
    /// Identify the birds in a WAV file, per 3 s window.
    Classify(classify::ClassifyArgs),
    /// Bring an old BirdNET-Pi or BirdNET-Go station's history into a team, as a satellite.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Measure the hub's parts.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// The classifier model directory.
    #[command(subcommand)]
    Model(ModelCommand),
    /// The recording satellite: register with a hub, run, status.
    #[command(subcommand)]
    Satellite(satellite::SatelliteCommand),
    /// How Home Assistant and other tools connect: the broker, the read-only login, the topics.
    Integrations,
    /// Lend this machine's cores to a hub: join its remote inference workers (docs/scaling.md).
    Worker(worker::WorkerArgs),
    /// Exit 0 when the local hub answers its health check.
    Healthcheck {
        /// Health URL (default: derived from http.bind).
        #[arg(long)]
        url: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Model load time, per-chunk latency, throughput with 1 and 2 threads, peak RSS.
    Inference(bench::InferenceArgs),
    /// argon2 parameters, hash cost and login latency against a real local hub.
    Auth(bench_auth::AuthArgs),
    /// Simulated satellites through the broker: ack latency, end-to-end vs bare model, WebSocket latency.
    Pipeline(bench_pipeline::PipelineArgs),
    /// Detection and session list latency (p50/p99) on a seeded year of data, DB size, peak RSS.
    Api(bench_api::ApiArgs),
    /// A 2,000,000-row CSV export over HTTP: time to first byte, total time, rows/s, RSS over time.
    Export(bench_export::ExportArgs),
    /// Resident memory by start stage, and of a real hub idle and draining a backlog.
    Memory(bench_memory::MemoryArgs),
    /// Detection settings on real birds mixed with non-bird sound: false positives per hour,
    /// recall and precision per SNR, extra model calls; per precision.
    Quality(bench_quality::QualityArgs),
    /// Local time's costs: the position-to-zone finder (load, lookups, memory), writes through
    /// the zone-aware rollup triggers, and a zone move's rate.
    Zones(bench_zones::ZonesArgs),
    /// A synthetic BirdNET-Pi station imported into a fresh data dir: rows/s, clips/s, peak RSS
    /// and RSS at each quarter (it streams: memory stays flat).
    Import(bench_import::ImportBenchArgs),
    /// Remote workers: drained rate against bare models, latency, wire bytes and hub CPU per chunk.
    Workers(bench_workers::WorkersArgs),
}

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// A BirdNET-Pi station: its directory (birds.db at the top or in scripts/, clips in
    /// By_Date/), its birds.db, or its backup tar.
    BirdnetPi(import::ImportArgs),
    /// A BirdNET-Go station: its data directory, its database (with -wal/-shm), or a tar of it.
    BirdnetGo(import::ImportArgs),
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Download, convert and verify the model (runs models/fetch.sh; extra args are passed on).
    Fetch {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Say whether the model is installed and where.
    Status,
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
    /// Print the dashboard's address and, while the hub has no account, the one-time setup code
    /// for creating the first one (what the package prints after installing).
    Welcome {
        /// Wait up to this many seconds for a starting hub to write its setup code.
        #[arg(long, value_name = "SECONDS", default_value_t = 0)]
        wait: u64,
    },
    /// Recompute the statistics rollups from the detections, chunks and votes, each satellite in
    /// its own zone (after editing the database by hand; zone changes need no rebuild).
    RebuildStats,
    /// Recompute every detection's "first of the day" and "first of the season" flags by its
    /// station's local calendar (detections stored before birdhub judged days in each station's
    /// zone keep their flags until this is run). With --dry-run, only count what would change.
    RecomputeFlags {
        /// Count the flags that would change and change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Write a backup (database snapshot, audio and picture files, secrets, manifest with
    /// checksums) to a .tar.zst file. The hub may keep running.
    Backup {
        /// The backup file to write, e.g. /mnt/usb/birdhub.tar.zst (made under a temp name, then renamed).
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
    },
    /// Restore a backup into the data dir. Stop the hub first (sudo systemctl stop birdhub): a
    /// database in use is refused. Every checksum is verified before anything changes; a backup
    /// from a newer schema than this birdhub knows is refused; an older one is migrated.
    Restore {
        /// The backup file (.tar.zst) made by `birdhub admin backup` or the daily backup.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Restore into a non-empty data dir: its contents move to <data_dir>.before-restore-<time>.
        #[arg(long)]
        force: bool,
    },
    /// Remote inference workers' keys: create, list, revoke.
    #[command(subcommand)]
    WorkerKey(worker::WorkerKeyCommand),
}

/// Runs the parsed command line; the process exit code reflects the outcome.
pub fn main(cli: Cli) -> ExitCode {
    crate::install_tls_provider();
    if matches!(cli.command, Command::DefaultConfig) {
        print!("{EXAMPLE_CONFIG}");
        return ExitCode::SUCCESS;
    }
    if let Command::Model(ModelCommand::Fetch { args }) = &cli.command {
        return model::fetch(args).unwrap_or_else(|e| {
            eprintln!("birdhub: {e:#}");
            ExitCode::FAILURE
        });
    }
    if let Command::Worker(args) = cli.command {
        return worker::main(args);
    }
    if let Command::Satellite(cmd) = cli.command {
        return satellite_main(cmd, cli.config, cli.data_dir, cli.log_level);
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
    // Benchmarks start hubs without a model on purpose and stop them under connected clients
    // (whose MQTT library then logs the lost session as an error): that noise would bury the figures.
    let quiet = if matches!(cli.command, Command::Bench(_)) { "error,rumqttc=off" } else { "warn" };
    init_tracing(if serving || cli.log_level.is_some() { &settings.log_level } else { quiet });

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

/// The satellite does not read the hub's settings: it has its own config file.
fn satellite_main(
    cmd: satellite::SatelliteCommand,
    config: Option<PathBuf>,
    data_dir: Option<PathBuf>,
    log_level: Option<String>,
) -> ExitCode {
    init_tracing(log_level.as_deref().unwrap_or("info,rumqttc=warn"));
    // A satellite waits on I/O and does one chunk at a time: two workers and a few blocking
    // threads (SQLite, files, the gate) keep it small on a Pi Zero.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("birdhub: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(satellite::dispatch(cmd, config, data_dir)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("birdhub satellite: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(filter: &str) {
    crate::logging::init(filter);
}

async fn dispatch(command: Command, settings: Settings) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve { .. } => app::run(settings).await.map(|()| ExitCode::SUCCESS),
        Command::DefaultConfig => unreachable!("handled before settings are loaded"),
        Command::Migrate => admin::migrate(&settings).await,
        Command::Admin(AdminCommand::CreateUser { email, name, password, platform_admin }) => {
            admin::create_user(&settings, email, name, password, platform_admin).await
        }
        Command::Admin(AdminCommand::Welcome { wait }) => admin::welcome(&settings, wait).await,
        Command::Admin(AdminCommand::RebuildStats) => admin::rebuild_stats(&settings).await,
        Command::Admin(AdminCommand::RecomputeFlags { dry_run }) => admin::recompute_flags(&settings, dry_run).await,
        Command::Admin(AdminCommand::Backup { to }) => backup::backup(&settings, to).await,
        Command::Admin(AdminCommand::Restore { file, force }) => backup::restore(&settings, file, force).await,
        Command::Healthcheck { url } => admin::healthcheck(&settings, url).await,
        Command::Admin(AdminCommand::WorkerKey(cmd)) => worker::key_command(&settings, cmd).await,
        Command::Worker(_) => unreachable!("handled before settings are loaded"),
        Command::Integrations => integrations::show(&settings).await,
        Command::Classify(args) => classify::run(&settings, args).await,
        Command::Import(ImportCommand::BirdnetPi(args)) => {
            import::run(&settings, crate::usecases::imports::PeerKind::BirdnetPi, args).await
        }
        Command::Import(ImportCommand::BirdnetGo(args)) => {
            import::run(&settings, crate::usecases::imports::PeerKind::BirdnetGo, args).await
        }
        Command::Bench(BenchCommand::Inference(args)) => bench::inference(&settings, args).await,
        Command::Bench(BenchCommand::Auth(args)) => bench_auth::run(args).await,
        Command::Bench(BenchCommand::Pipeline(args)) => bench_pipeline::run(&settings, args).await,
        Command::Bench(BenchCommand::Workers(args)) => bench_workers::run(&settings, args).await,
        Command::Bench(BenchCommand::Api(args)) => bench_api::run(&settings, args).await,
        Command::Bench(BenchCommand::Zones(args)) => bench_zones::run(args).await,
        Command::Bench(BenchCommand::Import(args)) => bench_import::run(&settings, args).await,
        Command::Bench(BenchCommand::Export(args)) => bench_export::run(&settings, args).await,
        Command::Bench(BenchCommand::Memory(args)) => bench_memory::run(&settings, args).await,
        Command::Bench(BenchCommand::Quality(args)) => bench_quality::run(&settings, args).await,
        Command::Model(ModelCommand::Fetch { .. }) => unreachable!("handled before settings are loaded"),
        Command::Model(ModelCommand::Status) => model::status(&settings),
        Command::Satellite(_) => unreachable!("handled before settings are loaded"),
    }
}
