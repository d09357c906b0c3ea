//! mDNS/DNS-SD on the LAN: the hub advertises itself as `_birdhub._tcp` so the Android app and the
//! coming `birdhub satellite` find it without anyone typing an IP address, and [`discover`] is the
//! client side of the same thing; [`resolves`] asks whether a `<hostname>.local` answers at all,
//! as the devices that open the hub's links would.
//!
//! The SRV record carries the HTTP port; the TXT record repeats it (`http_port`) beside the MQTT
//! port (`mqtt_port`), the hub's `version` and the API prefix (`path=/api`). A hub bound to one
//! address advertises that address only (so a hub on `127.0.0.1` is seen on the loopback and
//! nowhere else); a wildcard bind advertises every address of the host and follows its changes.
//! mDNS is a convenience: when multicast is unavailable the hub warns and serves on.

use std::{
    net::{IpAddr, SocketAddr},
    time::{Duration, Instant},
};

use mdns_sd::{HostnameResolutionEvent, ServiceDaemon, ServiceEvent, ServiceInfo};
use tokio_util::sync::CancellationToken;

/// The DNS-SD service type of a hub.
pub const SERVICE_TYPE: &str = "_birdhub._tcp.local.";

/// How long the goodbye packets get on shutdown before the daemon is dropped regardless.
const GOODBYE_WAIT: Duration = Duration::from_secs(1);

/// What a hub advertises: the bound listeners, resolved from `:0` where it applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advert {
    /// The bound HTTP address; its port is the SRV port, its IP chooses the advertised addresses.
    pub http: SocketAddr,
    /// The broker's MQTT/TCP port, absent in mode `api` (the broker is the dispatcher's).
    pub mqtt_port: Option<u16>,
}

/// A running advertisement; [`Advertiser::stop`] says goodbye on the LAN.
pub struct Advertiser {
    daemon: ServiceDaemon,
    fullname: String,
}

/// Registers the hub with a fresh mDNS daemon under `birdhub on <hostname>`.
pub fn advertise(advert: Advert, hostname: &str) -> Result<Advertiser, mdns_sd::Error> {
    let info = service_info(advert, hostname)?;
    let fullname = info.get_fullname().to_owned();
    let daemon = ServiceDaemon::new()?;
    daemon.register(info)?;
    Ok(Advertiser { daemon, fullname })
}

fn service_info(advert: Advert, hostname: &str) -> Result<ServiceInfo, mdns_sd::Error> {
    let http_port = advert.http.port().to_string();
    let version = env!("CARGO_PKG_VERSION");
    let mut txt = vec![("http_port", http_port.as_str()), ("version", version), ("path", "/api")];
    let mqtt_port = advert.mqtt_port.map(|p| p.to_string());
    if let Some(port) = &mqtt_port {
        txt.push(("mqtt_port", port.as_str()));
    }
    let host = format!("{}.local.", hostname.trim_end_matches('.'));
    let instance = format!("birdhub on {hostname}");
    let ip = advert.http.ip();
    if ip.is_unspecified() {
        // Every address of the host, kept current as DHCP or Wi-Fi change them.
        Ok(ServiceInfo::new(SERVICE_TYPE, &instance, &host, "", advert.http.port(), &txt[..])?.enable_addr_auto())
    } else {
        ServiceInfo::new(SERVICE_TYPE, &instance, &host, ip, advert.http.port(), &txt[..])
    }
}

impl Advertiser {
    /// The DNS-SD instance name, e.g. `birdhub on pi._birdhub._tcp.local.`.
    pub fn fullname(&self) -> &str {
        &self.fullname
    }

    /// Unregisters (the goodbye packets tell browsers the hub is gone) and stops the daemon.
    /// Blocks for at most about [`GOODBYE_WAIT`].
    pub fn stop(self) {
        if let Ok(done) = self.daemon.unregister(&self.fullname) {
            let _ = done.recv_timeout(GOODBYE_WAIT);
        }
        if let Ok(done) = self.daemon.shutdown() {
            let _ = done.recv_timeout(GOODBYE_WAIT);
        }
    }
}

/// The background task of `app`: advertise until `shutdown`, then unregister. Never fails: a
/// LAN without multicast gets a warning and a hub that is found by address only.
pub async fn run(advert: Advert, shutdown: CancellationToken) -> anyhow::Result<()> {
    let hostname = crate::links::hostname();
    let advertiser = match advertise(advert, &hostname) {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(error = %e, "mDNS advertisement unavailable; clients need the hub's address");
            shutdown.cancelled().await;
            return Ok(());
        }
    };
    let addresses = if advert.http.ip().is_unspecified() { "all".to_owned() } else { advert.http.ip().to_string() };
    tracing::info!(
        service = advertiser.fullname(),
        addresses,
        http_port = advert.http.port(),
        mqtt_port = advert.mqtt_port,
        "advertising the hub on the LAN (mDNS)"
    );
    if advert.http.ip().is_loopback() {
        tracing::info!("HTTP is bound to the loopback, so only this machine can use the mDNS answer");
    }
    shutdown.cancelled().await;
    tokio::task::spawn_blocking(move || advertiser.stop()).await?;
    Ok(())
}

/// A hub found on the LAN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundHub {
    /// `http://ip:port`, without the `/api` prefix; IPv4 when the hub has one.
    pub http_url: String,
    /// The address to dial the broker at (the same host as `http_url`).
    pub mqtt_host: String,
    /// The broker's MQTT/TCP port from the TXT record; `None` when the hub did not say.
    pub mqtt_port: Option<u16>,
    /// The hub's version from the TXT record (empty when missing).
    pub version: String,
    /// The DNS-SD instance name, e.g. `birdhub on pi._birdhub._tcp.local.`.
    pub name: String,
}

/// Browses for hubs for `wait` and returns them in the order they answered. Blocking: call it
/// from a thread or `spawn_blocking`. No multicast means an empty list, never an error.
pub fn discover(wait: Duration) -> Vec<FoundHub> {
    let Ok(daemon) = ServiceDaemon::new() else { return Vec::new() };
    let mut found: Vec<FoundHub> = Vec::new();
    if let Ok(events) = daemon.browse(SERVICE_TYPE) {
        let deadline = Instant::now() + wait;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let Ok(event) = events.recv_timeout(left) else { break };
            if let ServiceEvent::ServiceResolved(service) = event
                && let Some(hub) = found_hub(&service)
                && !found.iter().any(|h| h.name == hub.name)
            {
                found.push(hub);
            }
        }
        let _ = daemon.stop_browse(SERVICE_TYPE);
    }
    if let Ok(done) = daemon.shutdown() {
        let _ = done.recv_timeout(GOODBYE_WAIT);
    }
    found
}

/// Whether `host` (`garden.local`) answers an mDNS query within `wait`: what a phone or a laptop
/// on the LAN asks before it opens a `http://garden.local:8080` link. Blocking, like [`discover`];
/// no multicast means `false`.
pub fn resolves(host: &str, wait: Duration) -> bool {
    let Ok(daemon) = ServiceDaemon::new() else { return false };
    let name = format!("{}.", host.trim_end_matches('.'));
    let timeout_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
    let mut found = false;
    if let Ok(events) = daemon.resolve_hostname(&name, Some(timeout_ms)) {
        let deadline = Instant::now() + wait;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match events.recv_timeout(left) {
                Ok(HostnameResolutionEvent::AddressesFound(_, addresses)) if !addresses.is_empty() => {
                    found = true;
                    break;
                }
                Ok(HostnameResolutionEvent::SearchTimeout(_) | HostnameResolutionEvent::SearchStopped(_)) | Err(_) => {
                    break;
                }
                Ok(_) => {}
            }
        }
        let _ = daemon.stop_resolve_hostname(&name);
    }
    if let Ok(done) = daemon.shutdown() {
        let _ = done.recv_timeout(GOODBYE_WAIT);
    }
    found
}

fn found_hub(service: &mdns_sd::ResolvedService) -> Option<FoundHub> {
    let mut ips: Vec<IpAddr> = service.get_addresses().iter().map(|a| a.to_ip_addr()).collect();
    // IPv4 first (a link-local IPv6 needs a scope the URL cannot carry), then a stable order.
    ips.sort_by_key(|ip| (!ip.is_ipv4(), *ip));
    let ip = *ips.first()?;
    let host = match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    };
    let txt = |key: &str| service.get_property_val_str(key).map(str::to_owned);
    Some(FoundHub {
        http_url: format!("http://{host}:{}", service.get_port()),
        mqtt_host: host,
        mqtt_port: txt("mqtt_port").and_then(|p| p.parse().ok()),
        version: txt("version").unwrap_or_default(),
        name: service.get_fullname().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_advertisement_carries_ports_version_and_path() {
        let advert = Advert { http: "127.0.0.1:8080".parse().expect("addr"), mqtt_port: Some(1883) };
        let info = service_info(advert, "pi").expect("valid service");
        assert_eq!(info.get_fullname(), "birdhub on pi._birdhub._tcp.local.");
        assert_eq!(info.get_hostname(), "pi.local.");
        assert_eq!(info.get_port(), 8080);
        assert_eq!(info.get_property_val_str("http_port"), Some("8080"));
        assert_eq!(info.get_property_val_str("mqtt_port"), Some("1883"));
        assert_eq!(info.get_property_val_str("version"), Some(env!("CARGO_PKG_VERSION")));
        assert_eq!(info.get_property_val_str("path"), Some("/api"));
        assert!(!info.is_addr_auto(), "a specific bind advertises that address only");
    }

    #[test]
    fn a_wildcard_bind_follows_the_host_addresses_and_mqtt_can_be_absent() {
        let advert = Advert { http: "0.0.0.0:8080".parse().expect("addr"), mqtt_port: None };
        let info = service_info(advert, "pi").expect("valid service");
        assert!(info.is_addr_auto());
        assert_eq!(info.get_property_val_str("mqtt_port"), None);
    }
}
