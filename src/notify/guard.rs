//! Keeps a channel's requests inside the platform's [`TargetPolicy`] at connect time.
//!
//! Checking the URL's host name when the channel is saved is not enough: the name can resolve
//! elsewhere later (DNS rebinding), or to the hub itself (`localhost`). So the check runs on the
//! addresses the hub is about to connect to:
//! - a host name goes through [`PolicyResolver`], which resolves it and keeps only the addresses
//!   the policy allows (none left: [`Refused::NotAllowed`], no connection is made);
//! - an IP literal never reaches a resolver (the HTTP client connects to it directly), so
//!   [`check_literal`] refuses it before the request is made.
//!
//! Redirects are never followed by the notification client, so a receiver cannot send the hub on.

use std::{
    error::Error,
    fmt, io,
    net::{IpAddr, SocketAddr},
};

use reqwest::{
    Url,
    dns::{Addrs, Name, Resolve, Resolving},
};

use crate::domain::outbound::TargetPolicy;

/// Why a connection was not made.
#[derive(Debug)]
pub enum Refused {
    /// The host is, or resolves only to, addresses the policy does not allow.
    NotAllowed,
    /// The host name could not be resolved.
    Lookup(io::Error),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::NotAllowed => f.write_str("the target address is not allowed by the hub's channel_targets"),
            Refused::Lookup(e) => write!(f, "the host name could not be resolved: {e}"),
        }
    }
}

impl Error for Refused {}

/// Resolves host names with the system resolver and drops every address `policy` refuses.
#[derive(Debug, Clone, Copy)]
pub struct PolicyResolver {
    pub policy: TargetPolicy,
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await.map_err(|e| Box::new(Refused::Lookup(e)))?.collect();
            let allowed: Vec<SocketAddr> = found.into_iter().filter(|a| policy.allows(a.ip())).collect();
            if allowed.is_empty() {
                return Err(Box::new(Refused::NotAllowed) as Box<dyn Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// `Err(NotAllowed)` when `url`'s host is an IP address the policy refuses. Host names pass here
/// and are checked by [`PolicyResolver`] once resolved.
pub fn check_literal(url: &Url, policy: TargetPolicy) -> Result<(), Refused> {
    let ip = match url.host() {
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        _ => return Ok(()),
    };
    if policy.allows(ip) { Ok(()) } else { Err(Refused::NotAllowed) }
}

/// The [`Refused`] somewhere in `e`'s chain of causes (also inside `io::Error`s, whose `source`
/// skips the error they wrap).
pub fn refusal<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a Refused> {
    find(e, &|c| c.downcast_ref::<Refused>().is_some()).and_then(|c| c.downcast_ref::<Refused>())
}

/// The first error in `e`'s chain, looking inside `io::Error`s too, for which `hit` holds.
pub fn find<'a>(
    e: &'a (dyn Error + 'static),
    hit: &dyn Fn(&(dyn Error + 'static)) -> bool,
) -> Option<&'a (dyn Error + 'static)> {
    let mut next = Some(e);
    while let Some(cause) = next {
        if hit(cause) {
            return Some(cause);
        }
        if let Some(inner) = cause.downcast_ref::<io::Error>().and_then(|io| io.get_ref()) {
            let inner: &(dyn Error + 'static) = inner;
            if let Some(found) = find(inner, hit) {
                return Some(found);
            }
        }
        next = cause.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_hosts_are_checked_against_the_policy() {
        let cases: &[(&str, TargetPolicy, bool)] = &[
            ("http://127.0.0.1:8123/api", TargetPolicy::Loopback, true),
            ("http://127.0.0.1:8123/api", TargetPolicy::Lan, false),
            ("http://192.168.1.5/hook", TargetPolicy::Lan, true),
            ("http://192.168.1.5/hook", TargetPolicy::Public, false),
            ("http://[::1]/hook", TargetPolicy::Lan, false),
            ("http://[::ffff:169.254.169.254]/latest", TargetPolicy::Loopback, false),
            ("http://169.254.169.254/latest", TargetPolicy::Loopback, false),
            // The URL parser reads the odd IPv4 spellings as the address they mean.
            ("http://2130706433/hook", TargetPolicy::Lan, false),
            ("http://0x7f.1/hook", TargetPolicy::Lan, false),
            ("http://0/hook", TargetPolicy::Loopback, false),
            ("http://93.184.216.34/hook", TargetPolicy::Public, true),
            // Names are left to the resolver.
            ("http://localhost/hook", TargetPolicy::Public, true),
        ];
        for (url, policy, ok) in cases {
            let parsed = Url::parse(url).expect("url");
            assert_eq!(check_literal(&parsed, *policy).is_ok(), *ok, "{url} under {policy:?}");
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_only_to_refused_addresses_is_refused() {
        let name: Name = "localhost".parse().expect("name");
        let got = PolicyResolver { policy: TargetPolicy::Lan }.resolve(name).await;
        let e = got.err().expect("refused");
        assert!(matches!(refusal(&*e), Some(Refused::NotAllowed)), "{e}");
        let name: Name = "localhost".parse().expect("name");
        let addrs: Vec<SocketAddr> =
            PolicyResolver { policy: TargetPolicy::Loopback }.resolve(name).await.expect("allowed").collect();
        assert!(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
    }

    #[test]
    fn a_refusal_is_found_inside_an_io_error() {
        let wrapped = io::Error::other(Refused::NotAllowed);
        assert!(matches!(refusal(&wrapped), Some(Refused::NotAllowed)));
        let plain = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert!(refusal(&plain).is_none());
    }
}
