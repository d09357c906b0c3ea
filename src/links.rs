//! The hub's own public addresses, for every link it hands out: reset and invite links in mail,
//! share links and the broker URL of a satellite registration.
//!
//! A link never comes from a request header: anyone can send `Host: evil.example`, and a reset
//! link built from it hands the victim's token to the attacker. The base is `http.public_url`
//! (`mqtt.public_url` for the broker); where that is empty, an address the hub knows to be its own:
//! `http://<hostname>.local:<bound port>` (mDNS, which Raspberry Pi OS answers out of the box).
//! Resolved once at start, after the listeners are bound, so `:0` ports are real.
//!
//! A derived `<hostname>.local` may not resolve (no mDNS on the network, or a client without it):
//! [`Links::unresolved_host`] looks the name up from the hub itself (bounded, cached) so the
//! dashboard can say so, and [`page_base`] offers the address the page was opened with instead.

use std::{
    net::SocketAddr,
    sync::{
        Arc, OnceLock,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::sync::watch;

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

/// How long one lookup of the links' host name may take before it counts as not resolving.
const LOOKUP_WAIT: Duration = Duration::from_millis(1500);
/// How long an answer is kept before the name is looked up again.
const ANSWER_KEEP: Duration = Duration::from_secs(120);
/// How long a page waits for the very first answer (the hub asks at start, so rarely at all).
const FIRST_ANSWER_WAIT: Duration = Duration::from_secs(4);

/// Whether the host name of derived links resolves, as looked up from the hub itself.
#[derive(Debug)]
struct NameCheck {
    /// The last answer and when it came; `None` until the first lookup ends.
    answer: watch::Sender<Option<(Instant, bool)>>,
    /// A lookup is under way: one at a time, whoever asks.
    running: AtomicBool,
}

impl Default for NameCheck {
    fn default() -> Self {
        Self { answer: watch::channel(None).0, running: AtomicBool::new(false) }
    }
}

/// The host of a link base (`http://garden.local:8080` → `garden.local`, port 8080).
fn host_of(base: &str) -> Option<(String, u16)> {
    let url = url::Url::parse(base).ok()?;
    Some((url.host_str()?.to_owned(), url.port_or_known_default()?))
}

/// Whether `host` resolves from this machine: the system's resolver, then an mDNS query (what
/// the LAN's phones and laptops ask), each bounded by [`LOOKUP_WAIT`].
async fn resolves(host: String, port: u16) -> bool {
    let found = match tokio::time::timeout(LOOKUP_WAIT, tokio::net::lookup_host((host.as_str(), port))).await {
        Ok(Ok(mut addresses)) => addresses.next().is_some(),
        _ => false,
    };
    if found {
        return true;
    }
    let asked = tokio::task::spawn_blocking(move || crate::mdns::resolves(&host, LOOKUP_WAIT));
    matches!(tokio::time::timeout(LOOKUP_WAIT * 2, asked).await, Ok(Ok(true)))
}

/// The address a page was opened with, from its `Host` header, when it is a plain host (name or
/// IP, optional port): `http://192.168.1.20:8080`. Only ever shown to the person who sent it,
/// never put into a link the hub hands out (anyone can send any `Host`).
pub fn page_base(host_header: Option<&str>) -> Option<String> {
    let h = host_header?.trim();
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']');
    if h.is_empty() || h.len() > 255 || !h.chars().all(plain) || h.starts_with(['-', '.', ':']) {
        return None;
    }
    let url = url::Url::parse(&format!("http://{h}")).ok()?;
    url.host_str()?;
    Some(format!("http://{h}"))
}

/// The links as the running hub holds them: set once by `app::start`.
#[derive(Debug, Clone, Default)]
pub struct Links {
    /// The resolved links.
    links: Arc<OnceLock<PublicLinks>>,
    /// Whether their host name resolves, kept for [`ANSWER_KEEP`].
    names: Arc<NameCheck>,
}

impl Links {
    /// Records the resolved links; a second call is ignored (they never change while running).
    /// Derived links get their host name looked up at once, so pages rarely wait for it.
    pub fn init(&self, links: PublicLinks) {
        let _ = self.links.set(links);
        if let Some(links) = self.links.get()
            && links.derived
            && tokio::runtime::Handle::try_current().is_ok()
        {
            self.look_up(links);
        }
    }

    /// The resolved links. A state that was never started (CLI tools, benchmarks) resolves them
    /// from the settings alone, with the configured ports.
    pub fn get(&self, settings: &Settings) -> &PublicLinks {
        self.links.get_or_init(|| PublicLinks::resolve(settings, settings.http.bind, None, &hostname()))
    }

    /// The host name of the links when they were derived (no `http.public_url`) and it does not
    /// resolve from the hub: links starting with it may not open on other devices. A configured
    /// address is trusted. Answers from the cache; a page waits at most [`FIRST_ANSWER_WAIT`] for
    /// the first lookup, and an old answer is renewed in the background.
    pub async fn unresolved_host(&self, settings: &Settings) -> Option<String> {
        let links = self.get(settings);
        let (host, _) = host_of(&links.http_base)?;
        if !links.derived || host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
            return None;
        }
        let mut answers = self.names.answer.subscribe();
        let fresh = answers.borrow().is_some_and(|(at, _)| at.elapsed() < ANSWER_KEEP);
        if !fresh {
            self.look_up(links);
        }
        if answers.borrow().is_none() {
            let _ = tokio::time::timeout(FIRST_ANSWER_WAIT, answers.wait_for(Option::is_some)).await;
        }
        let resolved = answers.borrow().map(|(_, ok)| ok);
        (resolved == Some(false)).then_some(host)
    }

    /// Looks the links' host name up in the background, unless a lookup is already running.
    fn look_up(&self, links: &PublicLinks) {
        let Some((host, port)) = host_of(&links.http_base) else { return };
        if self.names.running.swap(true, Ordering::SeqCst) {
            return;
        }
        let names = self.names.clone();
        tokio::spawn(async move {
            let ok = resolves(host.clone(), port).await;
            if !ok {
                tracing::warn!(%host, "the links' host name does not resolve from this hub; set http.public_url");
            }
            names.answer.send_replace(Some((Instant::now(), ok)));
            names.running.store(false, Ordering::SeqCst);
        });
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
    fn the_page_address_is_a_plain_host_or_nothing() {
        assert_eq!(page_base(Some("192.168.1.20:8080")).as_deref(), Some("http://192.168.1.20:8080"));
        assert_eq!(page_base(Some("localhost:3000")).as_deref(), Some("http://localhost:3000"));
        assert_eq!(page_base(Some("[::1]:8080")).as_deref(), Some("http://[::1]:8080"));
        for bad in ["evil.example/path", "a b", "", "x@y", "-x", "<script>", "h:port"] {
            assert_eq!(page_base(Some(bad)), None, "{bad}");
        }
        assert_eq!(page_base(None), None);
        assert_eq!(host_of("http://garden.local:8080"), Some(("garden.local".into(), 8080)));
    }

    #[test]
    fn the_host_name_is_a_plain_name() {
        let h = hostname();
        assert!(!h.is_empty() && !h.contains(char::is_whitespace), "{h:?}");
    }
}
