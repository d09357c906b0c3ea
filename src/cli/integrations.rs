//! `birdhub integrations`: how Home Assistant, Node-RED and scripts connect to this hub. It
//! prints the broker address, the read-only login (generating its password on first use, like
//! the hub does), the team published, and the topics that login may read.

use std::process::ExitCode;

use crate::{
    config::{Settings, ensure_secrets},
    links::PublicLinks,
    mqtt::auth::READONLY_USER,
    store::Store,
    usecases::home_feed::{self, FeedError},
};

pub async fn show(settings: &Settings) -> anyhow::Result<ExitCode> {
    let mut settings = settings.clone();
    ensure_secrets(&mut settings)?;
    let i = &settings.integrations;
    let on_off = |on: bool| if on { "on" } else { "off" };
    println!("Home Assistant discovery: {}", on_off(i.home_assistant.enabled));
    println!("MQTT feed:                {}", on_off(i.active()));
    if !i.active() {
        println!();
        println!("Nothing is published and the read-only login is closed. To start, set in the config file:");
        println!("  [integrations.home_assistant]");
        println!("  enabled = true");
        println!("then restart the hub (sudo systemctl restart birdhub). See docs/home-assistant.md.");
        return Ok(ExitCode::SUCCESS);
    }
    let team = team_published(&settings).await?;
    let links = PublicLinks::resolve(&settings, settings.http.bind, None, &crate::links::hostname());
    println!("Team published:           {team}");
    println!();
    println!("Connect to the hub's broker (read-only):");
    println!("  broker:   {}", links.broker_url);
    println!("  username: {READONLY_USER}");
    println!("  password: {}", i.readonly_password.expose());
    println!("  may read: {}/#  {}/#", i.home_assistant.discovery_prefix, i.feed.root);
    let b = &i.bridge;
    println!();
    if b.host.trim().is_empty() {
        println!("Bridge: off (set integrations.bridge.host to publish to another broker too)");
    } else {
        let tls = if b.tls { " with TLS" } else { "" };
        println!("Bridge: publishing to {}:{}{tls} as client {}", b.host.trim(), b.port, b.client_id);
    }
    Ok(ExitCode::SUCCESS)
}

/// The team the hub publishes, by name and id, as the hub resolves it at start. An ambiguous
/// `integrations.team` is an error here too, naming the ids to choose from.
async fn team_published(settings: &Settings) -> anyhow::Result<String> {
    let wanted = settings.integrations.team.trim();
    let configured = if wanted.is_empty() { "the hub's only team".to_owned() } else { wanted.to_owned() };
    let db = settings.data_dir.join("birdhub.db");
    if !db.exists() {
        return Ok(configured);
    }
    let store = Store::open(&db)?;
    match home_feed::resolve_team(&store, wanted).await {
        Ok(team) if wanted.parse::<crate::ids::TenantId>().is_ok() => Ok(format!("{} (id {})", team.name, team.id)),
        Ok(team) => Ok(format!(
            "{} (id {})\n                          set integrations.team = \"{}\" to keep this team \
             whatever teams are renamed or created",
            team.name, team.id, team.id
        )),
        Err(e @ FeedError::AmbiguousName { .. }) => Err(e.into()),
        Err(e) => Ok(format!("{configured} (not found yet: {e})")),
    }
}
