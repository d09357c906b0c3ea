//! The hub's own public addresses, for every link it hands out: reset and invite links in mail,
//! share links and the broker URL of a satellite registration.
//!
//! A link never comes from a request header: anyone can send `Host: evil.example`, and a reset
//! link built from it hands the victim's token to the attacker. The base is `http.public_url`
//! (`mqtt.public_url` for the broker); where that is empty, an address the hub knows to be its own:
//! `http://<hostname>.local:<bound port>` (mDNS, which Raspberry Pi OS answers out of the box).
//! Resolved once at start, after the listeners are bound, so `:0` ports are real.

use std::{
    net::SocketAddr,
    sync::{Arc, OnceLock},
};

use crate::config::{Mode, Settings};

/// The resolved public addresses of this hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicLinks {
    /// Base of every HTTP link, without a trailing slash: `https://birds.example.org`.
    pub http_base: String,
    /// The broker URL handed to satellites at registration: `mqtt://birdhub.local:1883`.
    pub broker_url: String,
    /// The bound HTTP address when it names one interface (not `0.0.0.0`), for the start-up log
    /// and the docs: people on the LAN can use it where mDNS does not resolve.
    pub lan_http: Option<String>,
    /// Whether `http.public_url` was empty, so the start-up warning can say so.
    pub derived: bool,
}

impl PublicLinks {
    /// Resolves the links from the settings, the bound ports and this machine's host name.
    pub fn resolve(settings: &Settings, http: SocketAddr, mqtt: Option<SocketAddr>, hostname: &str) -> Self {
        let host = format!("{}.local", hostname.trim().trim_end_matches(".local"));
        let configured = settings.http.public_url.trim().trim_end_matches('/');
        let derived = configured.is_empty();
        let http_base = if derived { format!("http://{host}:{}", http.port()) } else { configured.to_owned() };
        let broker_url = match settings.mqtt.public_url.trim() {
            "" => derived_broker(settings, mqtt, &host),
            url => url.to_owned(),
        };
        let lan_http = (!http.ip().is_unspecified()).then(|| format!("http://{http}"));
        Self { http_base, broker_url, lan_http, derived }
    }

    /// Says once, at start, which base links use when none is configured, and how to set one.
    pub fn warn_if_derived(&self) {
        if self.derived {
            tracing::warn!(
                links = %self.http_base,
                lan = self.lan_http.as_deref().unwrap_or("any address of this machine"),
                "http.public_url is empty: links in mail and share links use {}. Set http.public_url \
                 (BIRDHUB_HTTP__PUBLIC_URL) to the address people use to reach the hub",
                self.http_base
            );
        }
    }
}

/// `mqtt(s)://<hostname>.local:<port>`: the embedded broker's bound port; with an existing
/// mosquitto its `mqtt.external`, in mode `api` the dispatcher's configured `mqtt.upstream` (also
/// the hub's own configuration, never a request).
fn derived_broker(settings: &Settings, bound: Option<SocketAddr>, host: &str) -> String {
    let scheme = if settings.mqtt.tls_cert.is_empty() || settings.mqtt.tls_key.is_empty() { "mqtt" } else { "mqtts" };
    let external = settings.mqtt.external.trim();
    if !external.is_empty() || (settings.mode == Mode::Api && bound.is_none()) {
        let upstream = if external.is_empty() { settings.mqtt.upstream.trim() } else { external };
        let on_this_machine = upstream
            .rsplit_once(':')
            .map(|(h, _)| h.trim_matches(['[', ']']))
            .is_none_or(|h| h == "localhost" || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()));
        if !on_this_machine {
            return format!("{scheme}://{upstream}");
        }
        let port = upstream.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()).unwrap_or(1883);
        return format!("{scheme}://{host}:{port}");
    }
    let port = bound.map_or(settings.mqtt.bind.port(), |a| a.port());
    format!("{scheme}://{host}:{port}")
}

/// The LAN address a process bound to `bind` serves on: that address when it names one interface;
/// for `0.0.0.0`/`::`, the address of the interface that routes off this machine (the kernel picks
/// it when a UDP socket is connected; no packet is sent); loopback when there is no route.
pub fn lan_ip(bind: std::net::IpAddr) -> std::net::IpAddr {
    use std::net::{IpAddr, Ipv4Addr, UdpSocket};
    if !bind.is_unspecified() {
        return bind;
    }
    let routed = || -> std::io::Result<IpAddr> {
        let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
        // TEST-NET-1 (RFC 5737): never a real host, so nothing can answer even by accident.
        socket.connect((Ipv4Addr::new(192, 0, 2, 1), 9))?;
        Ok(socket.local_addr()?.ip())
    };
    routed().ok().filter(|ip| !ip.is_unspecified()).unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// This machine's host name: the kernel's, else `/etc/hostname`, else `birdhub`.
pub fn hostname() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_owned())
        .find(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'))
        .unwrap_or_else(|| "birdhub".into())
}

/// The links as the running hub holds them: set once by `app::start`.
#[derive(Debug, Clone, Default)]
pub struct Links(Arc<OnceLock<PublicLinks>>);

impl Links {
    /// Records the resolved links; a second call is ignored (they never change while running).
    pub fn init(&self, links: PublicLinks) {
        let _ = self.0.set(links);
    }

    /// The resolved links. A state that was never started (CLI tools, benchmarks) resolves them
    /// from the settings alone, with the configured ports.
    pub fn get(&self, settings: &Settings) -> &PublicLinks {
        self.0.get_or_init(|| PublicLinks::resolve(settings, settings.http.bind, None, &hostname()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(port: u16) -> SocketAddr {
        SocketAddr::from(([0, 0, 0, 0], port))
    }

    #[test]
    fn configured_urls_win_and_lose_their_trailing_slash() {
        let mut s = Settings::default();
        s.http.public_url = "https://birds.example.org/".into();
        s.mqtt.public_url = "mqtts://birds.example.org:8883".into();
        let l = PublicLinks::resolve(&s, bound(8080), Some(bound(1883)), "pi");
        assert_eq!(l.http_base, "https://birds.example.org");
        assert_eq!(l.broker_url, "mqtts://birds.example.org:8883");
        assert!(!l.derived);
    }

    #[test]
    fn empty_urls_use_the_host_name_and_the_bound_ports() {
        let s = Settings::default();
        let l = PublicLinks::resolve(&s, bound(40123), Some(bound(40124)), "garden\n");
        assert_eq!(l.http_base, "http://garden.local:40123");
        assert_eq!(l.broker_url, "mqtt://garden.local:40124");
        assert_eq!(l.lan_http, None, "0.0.0.0 names no single address");
        assert!(l.derived);
        let lan = PublicLinks::resolve(&s, "192.168.1.20:8080".parse().expect("addr"), None, "garden");
        assert_eq!(lan.lan_http.as_deref(), Some("http://192.168.1.20:8080"));
    }

    #[test]
    fn an_api_hub_hands_out_its_dispatchers_broker() {
        let mut s = Settings { mode: Mode::Api, ..Settings::default() };
        s.mqtt.upstream = "dispatcher.lan:1884".into();
        assert_eq!(PublicLinks::resolve(&s, bound(8080), None, "pi").broker_url, "mqtt://dispatcher.lan:1884");
        s.mqtt.upstream = "127.0.0.1:1885".into();
        assert_eq!(PublicLinks::resolve(&s, bound(8080), None, "pi").broker_url, "mqtt://pi.local:1885");
    }

    #[test]
    fn a_hub_on_an_existing_mosquitto_hands_out_mosquitto() {
        let mut s = Settings::default();
        s.mqtt.external = "mqtt.lan:1884".into();
        assert_eq!(PublicLinks::resolve(&s, bound(8080), None, "pi").broker_url, "mqtt://mqtt.lan:1884");
        s.mqtt.external = "127.0.0.1:1885".into();
        assert_eq!(PublicLinks::resolve(&s, bound(8080), None, "pi").broker_url, "mqtt://pi.local:1885");
        s.mode = Mode::Api;
        assert_eq!(PublicLinks::resolve(&s, bound(8080), None, "pi").broker_url, "mqtt://pi.local:1885");
    }

    #[test]
    fn the_host_name_is_a_plain_name() {
        let h = hostname();
        assert!(!h.is_empty() && !h.contains(char::is_whitespace), "{h:?}");
    }
}
