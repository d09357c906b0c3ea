//! `birdhub worker`: lend this machine's cores to a hub (issue 49, docs/scaling.md), and
//! `birdhub admin worker-key`: mint, list and revoke the keys workers log in with.

use std::{path::PathBuf, process::ExitCode};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::{
    config::Settings,
    inference::{
        Precision,
        remote::{self, node},
    },
};

#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// The hub's broker: `host` or `host:port` (port 1883 unless given); the satellites' broker
    /// when the hub uses an existing mosquitto.
    #[arg(long, value_name = "HOST[:PORT]", env = "BIRDHUB_WORKER_HUB")]
    pub hub: Option<String>,
    /// A file holding the worker key (`bhw.<id>.<secret>`) from the dashboard or
    /// `birdhub admin worker-key create`; or set BIRDHUB_WORKER_KEY.
    #[arg(long, value_name = "PATH", env = "BIRDHUB_WORKER_KEY_FILE")]
    pub key_file: Option<PathBuf>,
    /// The hub's `mqtt.topic_root`.
    #[arg(long, default_value = "birdhub", env = "BIRDHUB_WORKER_TOPIC_ROOT")]
    pub topic_root: String,
    /// The model directory (made by `models/fetch.sh`, or the package's); it must match the hub's.
    #[arg(long, default_value = "", env = "BIRDHUB_WORKER_MODEL_DIR")]
    pub model_dir: String,
    /// Threads the model runs on; default: every core this process may use (its affinity mask
    /// and cgroup CPU quota included).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Which copy of the network: fp32, fp16 or int8 (docs/classifier.md).
    #[arg(long, default_value = "fp32")]
    pub precision: Precision,
    /// Windows per model call.
    #[arg(long, default_value_t = 8)]
    pub batch: usize,
    /// The name the hub lists this machine under; default: its hostname.
    #[arg(long)]
    pub name: Option<String>,
    /// Only measure: load the model, print this machine's bare rate (chunks/s at --threads and
    /// --batch) and exit; no hub needed.
    #[arg(long)]
    pub measure: bool,
}

/// Runs the worker (its own runtime: it needs no config file or data directory).
pub fn main(args: WorkerArgs) -> ExitCode {
    crate::logging::init(&std::env::var("BIRDHUB_LOG").unwrap_or_else(|_| "info,rumqttc=warn,ort=warn".into()));
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("birdhub worker: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("birdhub worker: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: WorkerArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        (1..=remote::wire::MAX_WINDOWS).contains(&args.batch),
        "--batch must be 1 to {}",
        remote::wire::MAX_WINDOWS
    );
    let budget = crate::inference::cores::CoreBudget::current();
    let threads = args.threads.unwrap_or(budget.cores).max(1);
    let machine = args.name.clone().unwrap_or_else(crate::links::hostname);
    let load = |id: uuid::Uuid, secret: String, host: String, port: u16| node::NodeOptions {
        host,
        port,
        topic_root: args.topic_root.clone(),
        id,
        secret,
        model_dir: args.model_dir.clone(),
        threads,
        precision: args.precision,
        batch: args.batch,
        machine: machine.chars().take(remote::wire::Hello::MAX_FIELD).collect(),
    };
    if args.measure {
        let options = load(uuid::Uuid::nil(), String::new(), String::new(), 0);
        let (classifier, _) = tokio::task::spawn_blocking(move || node::load(&options)).await??;
        let batch = args.batch;
        let rate = tokio::task::spawn_blocking(move || node::measure(&classifier, batch, 5.0)).await??;
        println!(
            "bare model on this machine: {rate:.1} chunks/s ({threads} threads, batch {batch}, {})",
            args.precision
        );
        return Ok(ExitCode::SUCCESS);
    }
    let hub = args.hub.clone().context("--hub is required (the hub's broker, host or host:port)")?;
    let (host, port) = match hub.rsplit_once(':') {
        Some((h, p)) => (h.to_owned(), p.parse::<u16>().with_context(|| format!("the port in --hub {hub:?}"))?),
        None => (hub.clone(), 1883),
    };
    let key = match (&args.key_file, std::env::var("BIRDHUB_WORKER_KEY")) {
        (Some(path), _) => std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        (None, Ok(k)) => k,
        (None, Err(_)) => anyhow::bail!("give the worker key with --key-file or BIRDHUB_WORKER_KEY"),
    };
    let (id, secret) = remote::parse_key(&key).context("that is not a worker key (bhw.<id>.<secret>)")?;
    let options = load(id, secret, host, port);
    let loading = options.clone();
    let (classifier, labels) = tokio::task::spawn_blocking(move || node::load(&loading)).await??;
    tracing::info!(
        model = classifier.model_id(),
        precision = %classifier.precision(),
        threads,
        batch = args.batch,
        "model loaded ({})",
        budget.reason
    );
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        crate::app::shutdown_signal().await;
        stop.cancel();
    });
    node::run(options, classifier, labels, shutdown).await
}

#[derive(Debug, clap::Subcommand)]
pub enum WorkerKeyCommand {
    /// Mints a key and prints it once.
    Create {
        /// What to call the machine ("study desktop").
        #[arg(long)]
        name: String,
    },
    /// Lists the keys (never their secrets).
    List,
    /// Revokes a key: the hub drops its worker within seconds and refuses it from then on.
    Revoke {
        /// The key's id (from `list`).
        id: uuid::Uuid,
    },
}

pub async fn key_command(settings: &Settings, cmd: WorkerKeyCommand) -> anyhow::Result<ExitCode> {
    use crate::usecases::worker_keys;
    let (store, _) = crate::app::open_store(&settings.data_dir).await?;
    let now = crate::time::Timestamp(chrono::Utc::now());
    // With an existing mosquitto, the worker's login is made (or deleted) there too.
    let stop = tokio_util::sync::CancellationToken::new();
    let _stop_on_return = stop.clone().drop_guard();
    let dynsec = match settings.uses_external_broker() && !matches!(cmd, WorkerKeyCommand::List) {
        true => Some(crate::mqtt::dynsec::DynSec::start(settings, "cli", stop.clone())?.0),
        false => None,
    };
    let logins: &dyn crate::usecases::broker_logins::BrokerLogins = match &dynsec {
        Some(d) => d,
        None => &crate::usecases::broker_logins::NoBrokerLogins,
    };
    match cmd {
        WorkerKeyCommand::Create { name } => {
            let (key, raw) = worker_keys::mint(&store, logins, &name, None, now).await?;
            println!("worker key {} ({}) created. It is shown only this once:\n\n{raw}\n", key.id, key.name);
            println!("On the worker machine: birdhub worker --hub <this hub>:1883 --key-file <file holding it>");
        }
        WorkerKeyCommand::List => {
            let keys = worker_keys::list(&store).await?;
            if keys.is_empty() {
                println!("no worker keys");
            }
            for k in keys {
                let state = match (&k.revoked_at, &k.last_seen_at) {
                    (Some(at), _) => format!("revoked {at}"),
                    (None, Some(at)) => format!("last seen {at}"),
                    (None, None) => "never seen".into(),
                };
                println!("{}  {}  {}  {state}", k.id, k.name, k.machine.as_deref().unwrap_or("-"));
            }
        }
        WorkerKeyCommand::Revoke { id } => match worker_keys::revoke(&store, id, now).await {
            Ok(()) => {
                if let Some(d) = &dynsec {
                    d.delete(&format!("{}{id}", crate::inference::remote::CLIENT_PREFIX)).await?;
                }
                println!("worker key {id} revoked; a running hub drops its worker within seconds")
            }
            Err(worker_keys::Error::NotFound) => {
                eprintln!("birdhub: no worker key {id}");
                return Ok(ExitCode::from(2));
            }
            Err(e) => return Err(e.into()),
        },
    }
    Ok(ExitCode::SUCCESS)
}
