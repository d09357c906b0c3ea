//! `birdhub integrations`: how Home Assistant, Node-RED and scripts connect to this hub. It
//! prints the broker address, the read-only login (generating its password on first use, like
//! the hub does) and the topics that login may read.

use std::process::ExitCode;

use crate::{
    config::{Settings, ensure_secrets},
    links::PublicLinks,
    mqtt::auth::READONLY_USER,
};

pub fn show(settings: &Settings) -> anyhow::Result<ExitCode> {
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
    let team = if i.team.trim().is_empty() { "the hub's only team" } else { i.team.trim() };
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
