//! `migrate`, `admin create-user`, `admin welcome`, `admin rebuild-stats`, `admin
//! recompute-flags` and `healthcheck`.

use std::{process::ExitCode, time::Duration};

use crate::{auth::password, config::Settings, domain::validate, store};

pub async fn migrate(settings: &Settings) -> anyhow::Result<ExitCode> {
    let (_, report) = crate::app::open_store(&settings.data_dir).await?;
    if report.applied.is_empty() {
        println!("database is up to date at schema version {}", report.to);
    } else {
        println!("migrated from schema version {} to {}: {}", report.from, report.to, report.applied.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn welcome(settings: &Settings, wait_secs: u64) -> anyhow::Result<ExitCode> {
    let links = crate::links::PublicLinks::resolve(settings, settings.http.bind, None, &crate::links::hostname());
    println!("Dashboard:  {}/", links.http_base);
    let bind = settings.http.bind;
    let lan = format!("http://{}:{}/", crate::links::lan_ip(bind.ip()), bind.port());
    if links.derived && !lan.starts_with("http://127.") {
        println!("        or  {lan}   (where .local names do not resolve)");
    }
    let (store, _) = crate::app::open_store(&settings.data_dir).await?;
    if !crate::usecases::first_run::needs_setup(&store).await? {
        println!("Sign in with your account.");
        return Ok(ExitCode::SUCCESS);
    }
    let file = settings.data_dir.join("setup-code");
    let deadline = std::time::Instant::now() + Duration::from_secs(wait_secs);
    let code = loop {
        match std::fs::read_to_string(&file) {
            Ok(code) if !code.trim().is_empty() => break Some(code.trim().to_owned()),
            _ if std::time::Instant::now() >= deadline => break None,
            _ => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    };
    match code {
        Some(code) => {
            println!("First account: open the dashboard, choose \"Create the first account\" and enter");
            println!("               the one-time setup code  {code}");
        }
        None => {
            println!("First account: start the hub (sudo systemctl start birdhub); it writes a one-time setup");
            println!("               code to {} and its log (journalctl -u birdhub | grep setup).", file.display());
        }
    }
    println!("Or from a shell: sudo -u birdhub birdhub admin create-user --email you@example.org --name You");
    Ok(ExitCode::SUCCESS)
}

pub async fn rebuild_stats(settings: &Settings) -> anyhow::Result<ExitCode> {
    let (store, _) = crate::app::open_store(&settings.data_dir).await?;
    let started = std::time::Instant::now();
    // Satellites whose zone the hub has not decided yet (it runs no mover here) get it first.
    crate::usecases::zones::resolve_pending(&store, &crate::clock::Clock::default()).await?;
    let before = store.call(|c| store::stats::rollups::drift(c)).await?;
    let filled = store.call(store::stats::rollups::rebuild).await?;
    for ((table, rows), (_, drifted)) in filled.iter().zip(&before) {
        println!("{table:<22} {rows:>9} rows  (before: {drifted} rows differed from a fresh count, both ways)");
    }
    println!("statistics rebuilt in {:.1} s", started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

pub async fn recompute_flags(settings: &Settings, dry_run: bool) -> anyhow::Result<ExitCode> {
    let (store, _) = crate::app::open_store(&settings.data_dir).await?;
    crate::usecases::zones::resolve_pending(&store, &crate::clock::Clock::default()).await?;
    let started = std::time::Instant::now();
    let found = store.call(move |c| store::first_flags::recompute(c, dry_run)).await?;
    let verb = if dry_run { "would change" } else { "changed" };
    println!("{} detections read in {:.1} s", found.detections, started.elapsed().as_secs_f64());
    println!(
        "first of the day:    {verb} {} ({} set, {} cleared)",
        found.day_set + found.day_cleared,
        found.day_set,
        found.day_cleared
    );
    println!(
        "first of the season: {verb} {} ({} set, {} cleared)",
        found.season_set + found.season_cleared,
        found.season_set,
        found.season_cleared
    );
    if dry_run && found.changes() > 0 {
        println!("run it again without --dry-run to write them");
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn create_user(
    settings: &Settings,
    email: String,
    name: String,
    given_password: Option<String>,
    platform_admin: bool,
) -> anyhow::Result<ExitCode> {
    let email = validate::email(&email).map_err(anyhow::Error::msg)?;
    let name = validate::name(&name, "the name").map_err(anyhow::Error::msg)?;
    if let Some(p) = &given_password {
        password::check_strength(p)?;
    }
    let (store, _) = crate::app::open_store(&settings.data_dir).await?;
    let first = store.call(|c| store::users::count(c)).await? == 0;
    let shown = given_password.is_none();
    let plain = given_password.unwrap_or_else(password::generate);
    // The same bounded pool the hub hashes through (one run: this command makes one account).
    let hash = (password::Passwords::new(1).hash(plain.clone()).await?, plain);
    let new = store::users::NewUser {
        email: email.clone(),
        name: name.clone(),
        password_hash: hash.0,
        is_platform_admin: platform_admin || first,
    };
    let team = format!("{name}'s team");
    let team_for_store = team.clone();
    let created = match store.call(move |c| store::users::create_with_team(c, &new, &team_for_store)).await {
        Err(store::Error::Duplicate) => anyhow::bail!("a user with email {email} already exists"),
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

pub async fn healthcheck(settings: &Settings, url: Option<String>) -> anyhow::Result<ExitCode> {
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
