//! The checks of `[mqtt]`, and of `mqtt.external` (an existing mosquitto instead of the embedded
//! broker) in particular: its address, the hub's login there, and the settings that only the
//! embedded broker reads.

use super::{ConfigError, Settings};

impl Settings {
    /// Whether satellites, workers and the hub use an existing mosquitto (`mqtt.external`).
    pub fn uses_external_broker(&self) -> bool {
        !self.mqtt.external.trim().is_empty()
    }

    /// `mqtt.external` as host and port; `None` when it is not set or not `host:port`.
    pub fn external_broker(&self) -> Option<(&str, u16)> {
        let (host, port) = self.mqtt.external.trim().rsplit_once(':')?;
        let host = host.trim_matches(['[', ']']);
        let port = port.parse::<u16>().ok().filter(|p| *p != 0)?;
        (!host.is_empty()).then_some((host, port))
    }

    pub(super) fn validate_mqtt(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError::Invalid { key: key.into(), message: why.into() });
        let root = &self.mqtt.topic_root;
        if root.is_empty() || root.contains(['/', '+', '#']) {
            return bad("mqtt.topic_root", "must be one topic level without '/', '+' or '#'");
        }
        if self.mqtt.tls_cert.is_empty() != self.mqtt.tls_key.is_empty() {
            return bad("mqtt.tls_cert", "set both mqtt.tls_cert and mqtt.tls_key, or neither");
        }
        if self.mqtt.upstream.rsplit_once(':').is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err()) {
            return bad("mqtt.upstream", "must be host:port");
        }
        self.validate_external_broker()
    }

    fn validate_external_broker(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError::Invalid { key: key.into(), message: why.into() });
        if !self.uses_external_broker() {
            return Ok(());
        }
        if self.external_broker().is_none() {
            return bad("mqtt.external", "must be empty (the embedded broker) or host:port of a mosquitto 2");
        }
        if self.mqtt.external_username.trim().is_empty() {
            return bad(
                "mqtt.external_username",
                "must name the hub's dynamic-security admin on mqtt.external (mosquitto_ctrl dynsec init)",
            );
        }
        if !self.mqtt.external_password.is_set() {
            return bad("mqtt.external_password", "must be set when mqtt.external is set");
        }
        if !self.mqtt.tls_cert.is_empty() {
            return bad(
                "mqtt.tls_cert",
                "configures the embedded broker only; with mqtt.external, TLS is mosquitto's own listener setting",
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Secret, Settings};

    fn external(addr: &str, user: &str, password: &str) -> Settings {
        let mut s = Settings::default();
        s.mqtt.external = addr.into();
        s.mqtt.external_username = user.into();
        s.mqtt.external_password = Secret::new(password);
        s
    }

    #[test]
    fn the_external_broker_needs_an_address_and_a_login() {
        assert!(Settings::default().validate_external_broker().is_ok(), "off by default");
        assert!(!Settings::default().uses_external_broker());
        let ok = external("mqtt.lan:1883", "birdhub", "pw");
        assert!(ok.validate_external_broker().is_ok());
        assert_eq!(ok.external_broker(), Some(("mqtt.lan", 1883)));
        assert_eq!(external("[::1]:1884", "u", "p").external_broker(), Some(("::1", 1884)));
        for (addr, user, password, key) in [
            ("mqtt.lan", "u", "p", "mqtt.external"),
            ("mqtt.lan:0", "u", "p", "mqtt.external"),
            (":1883", "u", "p", "mqtt.external"),
            ("mqtt.lan:1883", " ", "p", "mqtt.external_username"),
            ("mqtt.lan:1883", "u", "", "mqtt.external_password"),
        ] {
            let err = external(addr, user, password).validate_external_broker().expect_err(addr);
            assert!(err.to_string().contains(key), "{addr} {user}: {err}");
        }
        let mut tls = ok.clone();
        tls.mqtt.tls_cert = "/etc/cert.pem".into();
        assert!(tls.validate_external_broker().is_err(), "TLS is mosquitto's to configure");
    }
}
