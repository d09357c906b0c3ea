//! `birdhub bench auth`: the argon2 parameters, the cost of one hash, and the latency of a full
//! `POST /api/auth/login` against a real hub started on a loopback port with a temp data dir.

use std::{process::ExitCode, time::Instant};

use argon2::Params;

use super::bench::percentile;
use crate::{
    app,
    auth::password,
    config::Settings,
    store::{self, users::NewUser},
};

#[derive(Debug, clap::Args)]
pub struct AuthArgs {
    /// Logins to time.
    #[arg(long, default_value_t = 30)]
    pub logins: usize,
}

pub async fn run(args: AuthArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.logins > 0, "--logins must be positive");
    let p = Params::default();
    println!(
        "argon2id parameters: m = {} KiB, t = {} iterations, p = {} lane(s), {}-byte output",
        p.m_cost(),
        p.t_cost(),
        p.p_cost(),
        Params::DEFAULT_OUTPUT_LEN
    );

    let mut hashes = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        tokio::task::spawn_blocking(|| password::hash("bench password 123")).await??;
        hashes.push(ms(t));
    }
    hashes.sort_by(f64::total_cmp);
    println!("hash (one password):  p50 {:.1} ms   p99 {:.1} ms", percentile(&hashes, 50.0), percentile(&hashes, 99.0));

    let dir = tempfile_dir()?;
    let mut settings = Settings { data_dir: dir.clone(), log_level: "error".into(), ..Settings::default() };
    settings.http.bind = "127.0.0.1:0".parse()?;
    let hub = app::start(settings).await?;
    let hash = password::hash("bench password 123")?;
    let new = NewUser {
        email: "bench@example.org".into(),
        name: "Bench".into(),
        password_hash: hash,
        is_platform_admin: false,
    };
    hub.state.store.call(move |c| store::users::create_with_team(c, &new, "bench")).await?;
    let url = format!("http://{}/api/auth/login", hub.http_addr);
    let client = reqwest::Client::new();
    let body = serde_json::json!({"email": "bench@example.org", "password": "bench password 123"});
    let mut logins = Vec::new();
    for i in 0..args.logins {
        if i > 0 && i % 15 == 0 {
            // Stay under the 20-per-15-minutes limit of one IP by moving the hub's clock on.
            hub.state.clock.advance(std::time::Duration::from_secs(16 * 60));
        }
        let t = Instant::now();
        let status = client.post(&url).json(&body).send().await?.status();
        anyhow::ensure!(status.is_success(), "login failed with {status}");
        logins.push(ms(t));
    }
    logins.sort_by(f64::total_cmp);
    println!(
        "POST /api/auth/login:  p50 {:.1} ms   p99 {:.1} ms   ({} logins over loopback)",
        percentile(&logins, 50.0),
        percentile(&logins, 99.0),
        logins.len()
    );
    hub.stop().await?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(ExitCode::SUCCESS)
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("birdhub-bench-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
