//! Which addresses a team's channels may make the hub reach: the classification of an IP address
//! and the platform's policy ([`TargetPolicy`], the platform setting `channel_targets`).
//!
//! A webhook or chat channel is a URL a team admin types, so without a rule it is a way to make
//! the hub send requests into its own network (the LAN, services on the Pi itself, the cloud's
//! metadata service). The policy widens in three steps: `public` (the internet only), `lan` (also
//! private ranges), `loopback` (also the hub's own machine). Some addresses are never a
//! receiver, whatever the policy: link-local (where cloud metadata services live), the known
//! metadata addresses, unspecified, multicast, broadcast and reserved ranges.
//!
//! The check runs on the address the hub actually connects to (after DNS), see `notify::guard`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

/// The platform setting `channel_targets`: the widest class of address a channel may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetPolicy {
    /// Public internet addresses only: what a hub shared by teams that do not trust each other
    /// should choose.
    Public,
    /// Also private networks: 10/8, 172.16/12, 192.168/16, 100.64/10 (CGNAT, Tailscale), fc00::/7.
    Lan,
    /// Also the hub's own machine (127/8, ::1): Home Assistant or Node-RED on the same Pi. The
    /// default, for the single household that owns the hub.
    Loopback,
}

impl TargetPolicy {
    pub const ALL: [TargetPolicy; 3] = [TargetPolicy::Public, TargetPolicy::Lan, TargetPolicy::Loopback];

    /// Whether a channel may connect to `ip` under this policy.
    pub fn allows(self, ip: IpAddr) -> bool {
        match classify(ip) {
            AddressClass::Public => true,
            AddressClass::Lan => self >= TargetPolicy::Lan,
            AddressClass::Loopback => self >= TargetPolicy::Loopback,
            AddressClass::Forbidden => false,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TargetPolicy::Public => "public",
            TargetPolicy::Lan => "lan",
            TargetPolicy::Loopback => "loopback",
        }
    }
}

/// What kind of place an address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    /// Routable on the internet.
    Public,
    /// A private or otherwise non-global network the hub may sit in.
    Lan,
    /// The hub's own machine.
    Loopback,
    /// Never a receiver: link-local, cloud metadata, unspecified, multicast, broadcast, reserved.
    Forbidden,
}

/// Cloud metadata services outside the link-local range (AWS's IPv6 one; Alibaba's).
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);
const METADATA_V4: [Ipv4Addr; 1] = [Ipv4Addr::new(100, 100, 100, 200)];

/// The class of `ip`. An IPv6 address that carries an IPv4 one (mapped `::ffff:a.b.c.d`, the
/// NAT64 prefix `64:ff9b::/96`, 6to4 `2002::/16`) is classified as that IPv4 address.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    use AddressClass::*;
    let forbidden: [([u8; 4], u32); 5] = [
        ([0, 0, 0, 0], 8),      // "this network", including the unspecified 0.0.0.0
        ([169, 254, 0, 0], 16), // link-local: 169.254.169.254 is the metadata service of most clouds
        ([192, 0, 0, 0], 24),   // IETF protocol assignments
        ([224, 0, 0, 0], 4),    // multicast
        ([240, 0, 0, 0], 4),    // reserved, and the broadcast 255.255.255.255
    ];
    let lan: [([u8; 4], u32); 8] = [
        ([10, 0, 0, 0], 8),
        ([172, 16, 0, 0], 12),
        ([192, 168, 0, 0], 16),
        ([100, 64, 0, 0], 10),   // carrier-grade NAT, and Tailscale's addresses
        ([198, 18, 0, 0], 15),   // benchmarking, used inside some networks
        ([192, 0, 2, 0], 24),    // documentation: never on the internet
        ([198, 51, 100, 0], 24), // documentation
        ([203, 0, 113, 0], 24),  // documentation
    ];
    if METADATA_V4.contains(&ip) || forbidden.iter().any(|&(net, p)| in_v4(ip, net, p)) {
        Forbidden
    } else if ip.is_loopback() {
        Loopback
    } else if lan.iter().any(|&(net, p)| in_v4(ip, net, p)) {
        Lan
    } else {
        Public
    }
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, prefix: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    u128::from(ip) & mask == u128::from(net) & mask
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    use AddressClass::*;
    let s = ip.segments();
    let net = |a: u16, b: u16| Ipv6Addr::new(a, b, 0, 0, 0, 0, 0, 0);
    let v4_at = |i: usize| Ipv4Addr::new((s[i] >> 8) as u8, s[i] as u8, (s[i + 1] >> 8) as u8, s[i + 1] as u8);
    if ip.is_unspecified() || ip == METADATA_V6 {
        return Forbidden;
    }
    if ip.is_loopback() {
        return Loopback;
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    // 64:ff9b::/96, the well-known NAT64 prefix: a gateway forwards to the IPv4 address inside.
    if in_v6(ip, Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96) {
        return classify_v4(v4_at(6));
    }
    // 6to4: the IPv4 address of the far end sits in bits 16..48.
    if in_v6(ip, net(0x2002, 0), 16) {
        return classify_v4(v4_at(1));
    }
    let forbidden = [
        (Ipv6Addr::UNSPECIFIED, 96), // IPv4-compatible (deprecated) ::a.b.c.d
        (net(0x0100, 0), 64),        // discard-only
        (net(0x2001, 0), 32),        // Teredo tunnels
        (net(0x2001, 0x0db8), 32),   // documentation
        (net(0xfe80, 0), 10),        // link-local
        (net(0xff00, 0), 8),         // multicast
    ];
    let lan = [
        (net(0xfc00, 0), 7),       // unique local addresses
        (net(0xfec0, 0), 10),      // site-local (deprecated)
        (net(0x0064, 0xff9b), 32), // local-use NAT64 (64:ff9b:1::/48 and the rest of the /32)
    ];
    if forbidden.iter().any(|&(n, p)| in_v6(ip, n, p)) {
        Forbidden
    } else if lan.iter().any(|&(n, p)| in_v6(ip, n, p)) {
        Lan
    } else {
        Public
    }
}

#[cfg(test)]
mod tests {
    use super::{AddressClass::*, *};

    #[test]
    fn each_address_falls_in_its_class() {
        let table: &[(&str, AddressClass)] = &[
            ("8.8.8.8", Public),
            ("1.1.1.1", Public),
            ("172.32.0.1", Public),
            ("100.128.0.1", Public),
            ("192.169.0.1", Public),
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("10.0.0.1", Lan),
            ("10.255.255.255", Lan),
            ("172.16.0.1", Lan),
            ("172.31.255.255", Lan),
            ("192.168.1.20", Lan),
            ("100.64.0.1", Lan),
            ("100.127.255.255", Lan),
            ("0.0.0.0", Forbidden),
            ("0.1.2.3", Forbidden),
            ("169.254.169.254", Forbidden),
            ("169.254.0.1", Forbidden),
            ("100.100.100.200", Forbidden),
            ("224.0.0.1", Forbidden),
            ("239.255.255.250", Forbidden),
            ("255.255.255.255", Forbidden),
            ("240.0.0.1", Forbidden),
            ("2606:4700:4700::1111", Public),
            ("2001:4860:4860::8888", Public),
            ("::1", Loopback),
            ("::", Forbidden),
            ("fe80::1", Forbidden),
            ("febf::1", Forbidden),
            ("ff02::1", Forbidden),
            ("fd00:ec2::254", Forbidden),
            ("fd12:3456::1", Lan),
            ("fc00::1", Lan),
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:10.1.2.3", Lan),
            ("::ffff:8.8.8.8", Public),
            ("::ffff:169.254.169.254", Forbidden),
            ("::ffff:0.0.0.0", Forbidden),
            ("64:ff9b::a9fe:a9fe", Forbidden), // NAT64 of 169.254.169.254
            ("64:ff9b::808:808", Public),
            ("64:ff9b::7f00:1", Loopback),
            ("2002:7f00:1::1", Loopback), // 6to4 of 127.0.0.1
            ("2002:a9fe:a9fe::1", Forbidden),
            ("::127.0.0.1", Forbidden), // IPv4-compatible
            ("2001:db8::1", Forbidden),
            ("2001::1", Forbidden),
        ];
        for (text, class) in table {
            let ip: IpAddr = text.parse().expect("an address");
            assert_eq!(classify(ip), *class, "{text}");
        }
    }

    #[test]
    fn each_policy_widens_the_one_before() {
        let cases: &[(&str, [bool; 3])] = &[
            // address, allowed under [public, lan, loopback]
            ("93.184.216.34", [true, true, true]),
            ("192.168.1.20", [false, true, true]),
            ("fd12::1", [false, true, true]),
            ("127.0.0.1", [false, false, true]),
            ("::1", [false, false, true]),
            ("::ffff:127.0.0.1", [false, false, true]),
            ("169.254.169.254", [false, false, false]),
            ("::ffff:169.254.169.254", [false, false, false]),
            ("fd00:ec2::254", [false, false, false]),
            ("100.100.100.200", [false, false, false]),
            ("0.0.0.0", [false, false, false]),
            ("::", [false, false, false]),
            ("255.255.255.255", [false, false, false]),
            ("fe80::1", [false, false, false]),
        ];
        for (text, allowed) in cases {
            let ip: IpAddr = text.parse().expect("an address");
            let got = TargetPolicy::ALL.map(|p| p.allows(ip));
            assert_eq!(&got, allowed, "{text}");
        }
    }

    #[test]
    fn the_policy_reads_and_writes_its_lowercase_name() {
        for p in TargetPolicy::ALL {
            let json = serde_json::to_value(p).expect("json");
            assert_eq!(json, serde_json::Value::from(p.as_str()));
            assert_eq!(serde_json::from_value::<TargetPolicy>(json).expect("back"), p);
        }
        assert!(serde_json::from_str::<TargetPolicy>("\"everything\"").is_err());
        assert!(TargetPolicy::Public < TargetPolicy::Lan && TargetPolicy::Lan < TargetPolicy::Loopback);
    }
}
