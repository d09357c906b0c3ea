//! Topic shape `{topic_root}/{tenant_id}/{satellite_id}/{channel}` (SPEC 4.15).

use crate::ids::{SatelliteId, TenantId};

/// The channels of SPEC 4.15.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    Audio,
    Telemetry,
    Heartbeat,
    ConfigRequest,
    LiveAudio,
    LogResponse,
    Config,
    Ack,
    Update,
    Detection,
    LiveStart,
    LiveStop,
    LogRequest,
}

impl Channel {
    pub const ALL: [Channel; 13] = [
        Channel::Audio,
        Channel::Telemetry,
        Channel::Heartbeat,
        Channel::ConfigRequest,
        Channel::LiveAudio,
        Channel::LogResponse,
        Channel::Config,
        Channel::Ack,
        Channel::Update,
        Channel::Detection,
        Channel::LiveStart,
        Channel::LiveStop,
        Channel::LogRequest,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Audio => "audio",
            Channel::Telemetry => "telemetry",
            Channel::Heartbeat => "heartbeat",
            Channel::ConfigRequest => "config-request",
            Channel::LiveAudio => "live-audio",
            Channel::LogResponse => "log-response",
            Channel::Config => "config",
            Channel::Ack => "ack",
            Channel::Update => "update",
            Channel::Detection => "detection",
            Channel::LiveStart => "live-start",
            Channel::LiveStop => "live-stop",
            Channel::LogRequest => "log-request",
        }
    }

    pub fn parse(s: &str) -> Option<Channel> {
        Channel::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Whether satellites publish on this channel (the six the hub ingests).
    pub fn from_satellite(self) -> bool {
        matches!(
            self,
            Channel::Audio
                | Channel::Telemetry
                | Channel::Heartbeat
                | Channel::ConfigRequest
                | Channel::LiveAudio
                | Channel::LogResponse
        )
    }
}

/// `{root}/{tenant}/{satellite}/{channel}`.
pub fn topic(root: &str, tenant: TenantId, satellite: SatelliteId, channel: Channel) -> String {
    format!("{root}/{tenant}/{satellite}/{}", channel.as_str())
}

/// Where a dispatcher relays alerts and satellite outages to API processes (split mode):
/// `{root}/_hub/events`. Only the hub's own login may use it; satellites are confined to their
/// own tree, which can never be `_hub`.
pub fn hub_events(root: &str) -> String {
    format!("{root}/_hub/events")
}

/// The prefix a satellite is confined to: `{root}/{tenant}/{satellite}/`.
pub fn prefix(root: &str, tenant: TenantId, satellite: SatelliteId) -> String {
    format!("{root}/{tenant}/{satellite}/")
}

/// A parsed topic: the ids as written (validated as UUIDs) and the channel text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed<'a> {
    pub tenant: TenantId,
    pub satellite: SatelliteId,
    pub channel: &'a str,
}

pub fn parse<'a>(root: &str, topic: &'a str) -> Option<Parsed<'a>> {
    let rest = topic.strip_prefix(root)?.strip_prefix('/')?;
    let mut parts = rest.splitn(3, '/');
    let tenant = parts.next()?.parse().ok()?;
    let satellite = parts.next()?.parse().ok()?;
    let channel = parts.next()?;
    (!channel.contains('/')).then_some(Parsed { tenant, satellite, channel })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_round_trip_and_reject_junk() {
        let (t, s) = (TenantId::new(), SatelliteId::new());
        let built = topic("birdhub", t, s, Channel::ConfigRequest);
        let p = parse("birdhub", &built).expect("parse");
        assert_eq!((p.tenant, p.satellite, p.channel), (t, s, "config-request"));
        assert_eq!(Channel::parse(p.channel), Some(Channel::ConfigRequest));
        assert!(parse("birdhub", "birdhub/x/y/audio").is_none());
        assert!(parse("birdhub", &format!("other/{t}/{s}/audio")).is_none());
        assert!(parse("birdhub", &format!("birdhub/{t}/{s}/audio/extra")).is_none());
        assert!(Channel::Audio.from_satellite() && !Channel::Config.from_satellite());
    }
}
