//! Starting and supervising the hub: open the store and object store, bind the listeners, spawn the
//! HTTP server and background tasks, and stop them all together on SIGTERM or ctrl-c.
//!
//! [`start`] returns a running [`Hub`] with its real bound addresses, which is what the test harness
//! uses with `127.0.0.1:0` ports; [`run`] is `birdhub serve`.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context;
use tokio::{net::TcpListener, task::JoinSet};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::{
    api,
    cache::Cache,
    config::{Mode, Settings, ensure_secrets},
    events::Bus,
    inference, jobs,
    links::{self, PublicLinks},
    objects::ObjectStore,
    state::AppState,
    store::{self, Store},
};

/// How long the tasks get to finish after a stop request before they are aborted.
const GRACE: Duration = Duration::from_secs(4);

/// A running hub.
pub struct Hub {
    /// Where the HTTP API really listens (the port is resolved when `:0` was asked for).
    pub http_addr: SocketAddr,
    /// Where the embedded broker listens for MQTT over TCP (modes `full` and `dispatcher`).
    pub mqtt_addr: Option<SocketAddr>,
    /// Where the broker listens for MQTT over WebSocket (path `/mqtt`).
    pub mqtt_ws_addr: Option<SocketAddr>,
    /// The shared state, for in-process callers such as tests and benchmarks.
    pub state: AppState,
    shutdown: CancellationToken,
    supervisor: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Hub {
    /// Asks every task to stop.
    pub fn request_stop(&self) {
        self.shutdown.cancel();
    }

    /// Stops the hub and waits for it.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.request_stop();
        self.wait().await
    }

    /// Waits until the hub stops (on request or because a task failed).
    pub async fn wait(self) -> anyhow::Result<()> {
        self.supervisor.await.context("supervisor panicked")?
    }
}

/// Opens everything and starts serving. Returns once the listeners are bound.
pub async fn start(mut settings: Settings) -> anyhow::Result<Hub> {
    ensure_secrets(&mut settings).context("preparing secrets")?;
    let state = open_state(settings).await?;
    if state.settings.mode != Mode::Dispatcher {
        // Imports uploaded through the API that this hub was running when it stopped (issue 38).
        crate::usecases::import_uploads::recover(&state.store, &state.settings.data_dir).await?;
    }

    let listener = TcpListener::bind(state.settings.http.bind)
        .await
        .with_context(|| format!("binding HTTP to {} (is another hub running?)", state.settings.http.bind))?;
    let http_addr = listener.local_addr()?;

    let shutdown = CancellationToken::new();
    let mut tasks: JoinSet<(&'static str, anyhow::Result<()>)> = JoinSet::new();

    let mode = state.settings.mode;
    let (mut mqtt_addr, mut mqtt_ws_addr) = (None, None);
    if mode != Mode::Api {
        // Before anything listens; an ambiguous `integrations.team` only turns the integrations off.
        let feed_team = crate::integrations::team_at_start(&state).await?;
        if state.settings.uses_external_broker() {
            start_external_broker(&state, &mut tasks, &shutdown).await?;
        } else {
            let broker = crate::mqtt::broker::start(&state).await?;
            (mqtt_addr, mqtt_ws_addr) = (Some(broker.tcp_addr), broker.ws_addr);
            let (stop, handle, mut running) = (shutdown.clone(), broker.shutdown, broker.broker);
            tasks.spawn(async move {
                tokio::spawn(async move {
                    stop.cancelled().await;
                    handle.shutdown();
                });
                ("mqtt-broker", running.run().await.map_err(Into::into))
            });
        }
        let workers = crate::inference::worker::WorkerContext {
            store: state.store.clone(),
            objects: state.objects.clone(),
            bus: state.bus.clone(),
            clock: state.clock.clone(),
            signal: state.job_signal.clone(),
            board: state.workers.clone(),
            settings: state.settings.inference.clone(),
            instance_id: state.instance_id,
            alerts: state.alerts.clone(),
            range: state.range.clone(),
            metrics: state.metrics.clone(),
            remote: state.remote.clone(),
        };
        let stop = shutdown.clone();
        tasks.spawn(async move { ("inference", crate::inference::worker::run(workers, stop).await) });
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move { ("worker-guard", crate::mqtt::publish::run_worker_guard(st, stop).await) });
        let (offers, outbox) = tokio::sync::mpsc::channel(64);
        state.remote.attach(&state.settings.mqtt.topic_root, offers);
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks
            .spawn(async move { ("remote-offers", crate::mqtt::publish::run_offer_forwarder(st, outbox, stop).await) });
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(
            async move { ("detection-publisher", crate::mqtt::publish::run_detection_publisher(st, stop).await) },
        );
        if state.settings.integrations.active() && feed_team.runs() {
            let (st, stop) = (state.clone(), shutdown.clone());
            tasks.spawn(async move { ("integrations", crate::integrations::run(st, stop, feed_team).await) });
        }
    } else {
        if state.settings.uses_external_broker() {
            start_dynsec(&state, &mut tasks, &shutdown).await?;
        }
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move { ("mqtt-client", crate::mqtt::client::run(st, stop).await) });
    }
    if mode != Mode::Dispatcher {
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move { ("config-pusher", crate::mqtt::publish::run_config_pusher(st, stop).await) });
    }
    let (st, stop) = (state.clone(), shutdown.clone());
    tasks.spawn(async move { ("retention", jobs::retention::run(st, stop).await) });
    if mode != Mode::Dispatcher {
        // Beside the routes that queue pictures, so a request wakes it at once; claims keep
        // several API processes from downloading the same picture.
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move { ("image-fetcher", jobs::image_fetcher::run(st, stop).await) });
        // Beside the WebSockets that watch live sessions.
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move { ("live-sessions", jobs::live_sessions::run(st, stop).await) });
    }
    if mode != Mode::Api {
        // Beside ingest, which wakes it when the disk runs short.
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move { ("audio-retention", jobs::audio_retention::run(st, stop).await) });
    }
    if mode != Mode::Api {
        // One monitor per data dir: in split mode the dispatcher runs it.
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move { ("satellite-monitor", jobs::satellite_monitor::run(st, stop).await) });
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move { ("alert-watch", jobs::alert_watch::run(st, stop).await) });
        // One zone mover per data dir: it decides satellites' zones and moves their statistics.
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move {
            ("zone-mover", crate::usecases::zones::run_mover(st.store.clone(), st.clock.clone(), stop).await)
        });
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move { ("alert-sender", jobs::alert_sender::run(st, stop).await) });
        // The BirdWeather outbox, one sender per data dir like the alert sender.
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move { ("birdweather-sender", jobs::birdweather_sender::run(st, stop).await) });
        // Beside the outbox sender it queues into; one scheduler per data dir, like the monitor.
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move { ("scheduled-exports", jobs::scheduled_exports::run(st, stop).await) });
        // The daily backup, one per data dir like the scheduler.
        let (st, stop) = (state.clone(), shutdown.clone());
        tasks.spawn(async move { ("backup", jobs::backup::run(st, stop).await) });
    }

    // Every link the hub hands out starts from here; the ports are the bound ones.
    let public = PublicLinks::resolve(&state.settings, http_addr, mqtt_addr, &links::hostname());
    public.warn_if_derived();
    state.links.init(public);

    let router = if mode == Mode::Dispatcher {
        api::health_only(state.clone())
    } else {
        let needs_setup = crate::usecases::first_run::needs_setup(&state.store).await?;
        let setup = std::sync::Arc::new(crate::web::setup::SetupCode::new(&state.settings.data_dir, needs_setup));
        crate::web::router(state.clone(), api::router(state.clone()), setup)
    };
    let router =
        crate::metrics::http::counted(router.merge(api::metrics::router(state.clone())), state.metrics.clone());
    // Outside everything, so every answer (pages, API, assets, errors, 404s) carries them.
    let router = api::security_headers::apply(router, &state.settings);
    if state.metrics.is_enabled() {
        let (metrics, stop) = (state.metrics.clone(), shutdown.clone());
        tasks.spawn(async move { ("metrics-upkeep", crate::metrics::run_upkeep(metrics, stop).await) });
    }
    let stop = shutdown.clone();
    tasks.spawn(async move {
        let listener = crate::net::without_nagle(listener);
        let serve = axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>())
            .with_graceful_shutdown(async move { stop.cancelled().await });
        ("http", serve.await.map_err(Into::into))
    });
    let (st, stop) = (state.clone(), shutdown.clone());
    tasks.spawn(async move { ("registry", jobs::registry::run(st, stop).await) });
    if state.settings.http.mdns && mode != Mode::Dispatcher {
        // The ports are the bound ones; the dispatcher serves health only, so it stays quiet.
        let advert = crate::mdns::Advert { http: http_addr, mqtt_port: mqtt_addr.map(|a| a.port()) };
        let stop = shutdown.clone();
        tasks.spawn(async move { ("mdns", crate::mdns::run(advert, stop).await) });
    }

    tracing::info!(
        %http_addr,
        mode = ?state.settings.mode,
        data_dir = %state.settings.data_dir.display(),
        version = env!("CARGO_PKG_VERSION"),
        "birdhub is up"
    );
    report_model_status(&state.settings);
    let supervisor = tokio::spawn(supervise(tasks, shutdown.clone()));
    Ok(Hub { http_addr, mqtt_addr, mqtt_ws_addr, state, shutdown, supervisor })
}

/// `mqtt.external`: the logins on mosquitto ([`crate::mqtt::dynsec`]), checked and tidied before
/// anything is served, then the connection that carries the hub's messages in place of the
/// embedded broker ([`crate::mqtt::external`]).
async fn start_external_broker(
    state: &AppState,
    tasks: &mut JoinSet<(&'static str, anyhow::Result<()>)>,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    let dynsec = start_dynsec(state, tasks, shutdown).await?;
    crate::mqtt::logins::reconcile_and_report(state, &dynsec)
        .await
        .context("reconciling the logins on mosquitto with the database")?;
    let auth = crate::mqtt::auth::BrokerAuth::new(
        state.store.clone(),
        &state.settings.mqtt.topic_root,
        state.settings.security.internal_api_key.clone(),
        None,
        state.remote.clone(),
    );
    let ingest = Arc::new(crate::mqtt::ingest::Ingest::new(state.clone(), auth).context("starting the chunk writer")?);
    let (st, stop) = (state.clone(), shutdown.clone());
    tasks.spawn(async move { ("mqtt-external", crate::mqtt::external::run(st, ingest, stop).await) });
    Ok(())
}

/// Connects to mosquitto's dynamic security as the hub's admin login and gives that login the
/// hub's role; the start fails with the reason when mosquitto does not answer.
async fn start_dynsec(
    state: &AppState,
    tasks: &mut JoinSet<(&'static str, anyhow::Result<()>)>,
    shutdown: &CancellationToken,
) -> anyhow::Result<crate::mqtt::dynsec::DynSec> {
    let (dynsec, running) =
        crate::mqtt::dynsec::DynSec::start(&state.settings, &state.instance_id.to_string(), shutdown.clone())?;
    tasks.spawn(async move {
        let _ = running.await;
        ("mqtt-dynsec", Ok(()))
    });
    dynsec
        .grant_hub(&state.settings)
        .await
        .with_context(|| format!("setting up the hub's login on mosquitto at {}", state.settings.mqtt.external))?;
    state.mqtt.set_dynsec(dynsec.clone());
    tracing::info!(broker = %state.settings.mqtt.external, "using an existing mosquitto; its logins are managed through dynamic security");
    Ok(dynsec)
}

/// Says at start whether the classifier can run. Without it the hub still serves everything else,
/// and audio waits in the queue until a model is installed.
fn report_model_status(settings: &Settings) {
    if settings.mode == Mode::Api {
        return; // the dispatcher classifies
    }
    match inference::ModelDir::locate(&settings.inference.model_dir).and_then(|d| d.check().map(|()| d)) {
        Ok(dir) => tracing::info!(model_dir = %dir.path.display(), "classifier model found"),
        Err(e) => {
            tracing::warn!("classifier unavailable: {e}. Audio will wait in the queue until the model is installed.")
        }
    }
}

/// Creates the data dir if needed, opens `birdhub.db` in it and applies pending migrations.
pub async fn open_store(data: &std::path::Path) -> anyhow::Result<(Store, store::migrate::Report)> {
    std::fs::create_dir_all(data).with_context(|| format!("creating data dir {}", data.display()))?;
    let store = Store::open(&data.join("birdhub.db")).context("opening the database")?;
    // An upgrade can take minutes on a Pi (0016 compacts the file once): keep systemd from
    // timing the start out while it runs.
    let keepalive = tokio::spawn(async {
        loop {
            crate::systemd::notify("EXTEND_TIMEOUT_USEC=120000000\nWATCHDOG=1\nSTATUS=Upgrading the database");
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        }
    });
    let report = store.migrate().await.context("migrating the database");
    keepalive.abort();
    let report = report?;
    // Chunks stored before sessions were kept (or by an older hub) get theirs now.
    let placed = store.call(store::recording_sessions::backfill).await.context("placing chunks in sessions")?;
    if placed > 0 {
        tracing::info!(chunks = placed, "recording sessions rebuilt for older chunks");
    }
    Ok((store, report))
}

/// Opens the database (migrating it) and the object store under the data dir.
pub async fn open_state(settings: Settings) -> anyhow::Result<AppState> {
    let data = &settings.data_dir;
    let (store, report) = open_store(data).await?;
    if !report.applied.is_empty() {
        tracing::info!(from = report.from, to = report.to, "database migrated");
    }
    let objects = ObjectStore::open(data.join("objects")).context("opening the object store")?;
    let cache = Cache::new(settings.cache.max_entries, &settings.cache.registry_prefix);
    let mailer = crate::mail::Mailer::new(&settings.smtp).context("configuring SMTP")?;
    let secrets = crate::auth::secretbox::SecretBox::from_hex(settings.security.mfa_encryption_key.expose())
        .context("reading MFA_ENCRYPTION_KEY (security.mfa_encryption_key)")?;
    let clock = crate::clock::Clock::default();
    // A key other than the one the stored secrets were sealed with is said at once, and loudly;
    // nothing is re-sealed under it, so second factors fail closed until the key is restored.
    if let Err(e) = crate::usecases::mfa::check_key(&store, &secrets, &clock).await {
        tracing::error!("{e}");
    }
    let settings = Arc::new(settings);
    let links = crate::links::Links::default();
    let names = crate::inference::translations::Translations::new(&settings.inference.model_dir);
    let alerts = crate::usecases::alerting::AlertContext::new(settings.clone(), links.clone(), names.clone());
    let outbound = crate::usecases::alert_delivery::Outbound::new(&store, &secrets, &mailer, &clock);
    let images = crate::usecases::species_images::Images::new(&settings.species_images);
    let weather = crate::usecases::weather::Provider::new(&settings.weather);
    let disk = crate::usecases::audio_retention::DiskGuard::new(
        crate::usecases::audio_retention::Policy {
            keep_audio_days: settings.retention.keep_audio_days,
            min_free_bytes: settings.retention.min_free_disk_mb.saturating_mul(1_048_576),
        },
        &settings.data_dir,
    );
    let metrics = crate::metrics::Metrics::new(settings.metrics.enabled);
    Ok(AppState {
        disk,
        range: crate::inference::range::Shared::new(&settings.inference.model_dir),
        names,
        alerts,
        outbound,
        images,
        mqtt: crate::mqtt::MqttHandle::default(),
        job_signal: Default::default(),
        workers: Default::default(),
        remote: Default::default(),
        clock,
        mailer,
        settings,
        store,
        objects,
        cache,
        bus: Bus::new(1024),
        instance_id: Uuid::new_v4(),
        started_at: chrono::Utc::now(),
        links,
        secrets,
        weather,
        logs: crate::mqtt::logs::LogRequests::new(),
        live: crate::mqtt::live::LiveSessions::new(),
        metrics,
        passwords: crate::auth::password::Passwords::default(),
        spectrograms: crate::media::audio_source::Sources::per_core(),
    })
}

/// Waits for the first task to end. A task ending on its own is a failure: everything is stopped
/// and the error returned (systemd then restarts the hub). On a stop request, tasks get [`GRACE`].
async fn supervise(
    mut tasks: JoinSet<(&'static str, anyhow::Result<()>)>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let mut failure: Option<anyhow::Error> = None;
    tokio::select! {
        biased;
        _ = shutdown.cancelled() => {}
        Some(done) = tasks.join_next(), if !shutdown.is_cancelled() => {
            let err = match done {
                Ok((name, Ok(()))) => anyhow::anyhow!("task {name} stopped unexpectedly"),
                Ok((name, Err(e))) => e.context(format!("task {name} failed")),
                Err(e) => anyhow::anyhow!("a task panicked: {e}"),
            };
            if !shutdown.is_cancelled() {
                tracing::error!(error = %format!("{err:#}"), "stopping the hub");
                failure = Some(err);
            }
            shutdown.cancel();
        }
    }
    let drain = async {
        while let Some(done) = tasks.join_next().await {
            match done {
                Ok((name, Ok(()))) => tracing::debug!(task = name, "stopped"),
                Ok((name, Err(e))) => tracing::warn!(task = name, error = %format!("{e:#}"), "stopped with an error"),
                Err(e) => tracing::warn!(error = %e, "task panicked while stopping"),
            }
        }
    };
    if tokio::time::timeout(GRACE, drain).await.is_err() {
        tracing::warn!("tasks did not stop within {GRACE:?}; aborting them");
        tasks.abort_all();
    }
    failure.map_or(Ok(()), Err)
}

/// `birdhub serve`: start, then stop cleanly on SIGTERM (systemd) or ctrl-c.
pub async fn run(settings: Settings) -> anyhow::Result<()> {
    let hub = start(settings).await?;
    let users = hub.state.store.call(|c| store::users::count(c)).await?;
    if users == 0 {
        tracing::warn!(
            "no accounts yet: create the first one with `birdhub admin create-user --email you@example.org --name You`"
        );
    }
    let stop = hub.shutdown.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("stop requested; shutting down");
        crate::systemd::notify("STOPPING=1");
        stop.cancel();
    });
    // Under systemd (`Type=notify`): listening now, and alive while the database answers.
    let status = format!("STATUS=serving HTTP on {}\nREADY=1", hub.http_addr);
    if crate::systemd::notify(&status) {
        tracing::info!("told systemd the hub is ready");
    }
    if let Some(every) = crate::systemd::watchdog_interval() {
        tracing::info!(seconds = every.as_secs_f64(), "systemd watchdog on");
        tokio::spawn(crate::systemd::watchdog(hub.state.store.clone(), every, hub.shutdown.clone()));
    }
    let result = hub.wait().await;
    tracing::info!("birdhub stopped");
    result
}

pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
