//! The hub is found on the LAN by mDNS/DNS-SD: a second mdns-sd client (`birdhub::mdns::discover`)
//! browses `_birdhub._tcp`, reads the ports from the TXT record and reaches the API at the
//! advertised address; a hub with `http.mdns = false` is not advertised.

mod common;

use std::time::Duration;

use birdhub::mdns::{FoundHub, discover};

/// Browses in short rounds until `wanted` answers or the rounds run out (every wait is bounded).
async fn browse_for(wanted: impl Fn(&FoundHub) -> bool) -> (Option<FoundHub>, Vec<FoundHub>) {
    let mut seen = Vec::new();
    for _ in 0..4 {
        let round = tokio::task::spawn_blocking(|| discover(Duration::from_secs(2))).await.expect("browse thread");
        let hit = round.iter().find(|h| wanted(h)).cloned();
        seen.extend(round);
        if hit.is_some() {
            return (hit, seen);
        }
    }
    (None, seen)
}

fn port_of(url: &str) -> Option<u16> {
    url.rsplit_once(':').and_then(|(_, p)| p.parse().ok())
}

#[tokio::test]
async fn an_advertised_hub_is_found_and_reached_and_a_silent_one_is_not() {
    // A wildcard bind, as on a Pi: the advertisement then carries the host's LAN addresses.
    let hub = common::spawn_hub_with(|s| {
        s.http.mdns = true;
        s.http.bind = "0.0.0.0:0".parse().expect("addr");
    })
    .await;
    let silent = common::spawn_hub_with(|s| {
        s.http.mdns = false;
        s.http.bind = "0.0.0.0:0".parse().expect("addr");
    })
    .await;
    let (http_port, mqtt_port) = (hub.http_addr.port(), hub.mqtt_port);

    let (found, seen) = browse_for(|h| port_of(&h.http_url) == Some(http_port)).await;
    let found = found.unwrap_or_else(|| panic!("hub on port {http_port} not discovered; saw {seen:?}"));
    assert_eq!(found.mqtt_port, Some(mqtt_port), "TXT mqtt_port is the bound broker port");
    assert_eq!(found.version, env!("CARGO_PKG_VERSION"));
    assert!(found.name.ends_with(birdhub::mdns::SERVICE_TYPE), "{}", found.name);
    assert!(found.http_url.starts_with("http://") && !found.http_url.contains('['), "IPv4 preferred: {found:?}");

    let health = reqwest::get(format!("{}/api/health", found.http_url)).await.expect("advertised address answers");
    assert_eq!(health.status(), 200);

    let silent_port = silent.http_addr.port();
    assert!(
        !seen.iter().any(|h| port_of(&h.http_url) == Some(silent_port)),
        "http.mdns = false must not advertise (port {silent_port}): {seen:?}"
    );

    silent.stop().await.expect("clean stop");
    hub.stop().await.expect("clean stop");
}
