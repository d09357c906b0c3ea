use std::{io::Write, path::PathBuf};

use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().expect("temp file");
    f.write_all(text.as_bytes()).expect("write");
    f
}

#[test]
fn example_config_is_exactly_the_defaults() {
    let f = file(EXAMPLE_CONFIG);
    let s = Settings::load(&Sources { config_file: Some(f.path().into()), ..Default::default() }).expect("load");
    assert_eq!(s, Settings::default());
}

#[test]
fn file_beats_defaults_env_beats_file_flag_beats_env() {
    let f = file("log_level = \"debug\"\n[http]\nbind = \"127.0.0.1:9001\"\n[mqtt]\nbind = \"127.0.0.1:1901\"\n");
    let base = Sources { config_file: Some(f.path().into()), ..Default::default() };

    let s = Settings::load(&base).expect("file only");
    assert_eq!(s.http.bind.port(), 9001);
    assert_eq!(s.mqtt.bind.port(), 1901);
    assert_eq!(s.log_level, "debug");
    assert_eq!(s.mode, Mode::Full, "untouched keys keep their defaults");

    let with_env =
        Sources { env: env(&[("BIRDHUB_HTTP__BIND", "127.0.0.1:9002"), ("BIRDHUB_MODE", "api")]), ..base.clone() };
    let s = Settings::load(&with_env).expect("file + env");
    assert_eq!(s.http.bind.port(), 9002);
    assert_eq!(s.mqtt.bind.port(), 1901, "file value survives where env is silent");
    assert_eq!(s.mode, Mode::Api);

    let with_cli = Sources {
        cli: CliOverrides {
            http_bind: Some("127.0.0.1:9003".parse().expect("addr")),
            mode: Some(Mode::Dispatcher),
            ..Default::default()
        },
        ..with_env
    };
    let s = Settings::load(&with_cli).expect("file + env + flags");
    assert_eq!(s.http.bind.port(), 9003);
    assert_eq!(s.mode, Mode::Dispatcher);
    assert_eq!(s.log_level, "debug");
}

#[test]
fn spec_env_names_are_honoured_and_typed() {
    let key = "ab".repeat(32);
    let s = Settings::load(&Sources {
        env: env(&[
            ("MFA_ENCRYPTION_KEY", &key),
            ("HUB_INTERNAL_API_KEY", "internal-123"),
            ("SMTP_HOST", "mail.example.org"),
            ("LIVE_AUDIO_TIMEOUT_MS", "15000"),
            ("BIRDHUB_HTTP__TRUST_PROXY", "yes"),
            ("BIRDHUB_INFERENCE__THRESHOLD", "0.5"),
        ]),
        ..Default::default()
    })
    .expect("load");
    assert_eq!(s.security.mfa_encryption_key.expose(), key);
    assert!(s.security.internal_api_key.matches("internal-123"));
    assert_eq!(s.smtp.host, "mail.example.org");
    assert_eq!(s.live_audio.timeout_ms, 15_000);
    assert!(s.http.trust_proxy);
    assert!((s.inference.threshold - 0.5).abs() < f32::EPSILON);
}

#[test]
fn species_images_are_off_by_default_and_set_from_file_or_env() {
    let s = Settings::default();
    assert!(s.species_images.source_url.is_empty(), "no internet is assumed");
    assert_eq!(s.species_images.max_bytes, 2 * 1024 * 1024);
    let f = file("[species_images]\nsource_url = \"https://img.example.org/{scientific_name}?c={code}\"\n");
    let s = Settings::load(&Sources {
        config_file: Some(f.path().into()),
        env: env(&[("BIRDHUB_SPECIES_IMAGES__MAX_BYTES", "65536"), ("BIRDHUB_SPECIES_IMAGES__TIMEOUT_SECS", "3")]),
        ..Default::default()
    })
    .expect("load");
    assert_eq!(s.species_images.source_url, "https://img.example.org/{scientific_name}?c={code}");
    assert_eq!((s.species_images.max_bytes, s.species_images.timeout_secs), (65_536, 3));
    assert_eq!(s.species_images.max_attempts, 10);
}

#[test]
fn weather_is_off_by_default_and_set_from_file_or_env() {
    let s = Settings::default();
    assert_eq!((s.weather.provider_url.as_str(), s.weather.timeout_secs), ("", 10));
    let f = file("[weather]\nprovider_url = \"https://archive-api.open-meteo.com/v1/archive\"\n");
    let s = Settings::load(&Sources {
        config_file: Some(f.path().into()),
        env: env(&[("BIRDHUB_WEATHER__TIMEOUT_SECS", "3")]),
        ..Default::default()
    })
    .expect("load");
    assert_eq!(s.weather.provider_url, "https://archive-api.open-meteo.com/v1/archive");
    assert_eq!(s.weather.timeout_secs, 3);
}

#[test]
fn releases_take_200_mb_apks_and_versions_from_file_or_env() {
    let s = Settings::default();
    assert_eq!(s.releases.max_apk_bytes, 209_715_200);
    assert_eq!((s.releases.hub_version.as_str(), s.releases.satellite_version.as_str()), ("", ""));
    let f = file("[releases]\nhub_version = \"0.60.1\"\nmax_apk_bytes = 65536\n");
    let s = Settings::load(&Sources {
        config_file: Some(f.path().into()),
        env: env(&[("BIRDHUB_RELEASES__SATELLITE_VERSION", "2.3.0-beta.1")]),
        ..Default::default()
    })
    .expect("load");
    assert_eq!(s.releases.max_apk_bytes, 65_536);
    assert_eq!(s.releases.hub_version, "0.60.1");
    assert_eq!(s.releases.satellite_version, "2.3.0-beta.1");
}

#[test]
fn systemd_state_directory_is_the_default_data_dir() {
    let s = Settings::load(&Sources { env: env(&[("STATE_DIRECTORY", "/var/lib/birdhub")]), ..Default::default() })
        .expect("load");
    assert_eq!(s.data_dir, PathBuf::from("/var/lib/birdhub"));
}

#[test]
fn the_installed_config_defaults_to_the_installed_data_dir_but_a_chosen_file_does_not() {
    let system = file("mode = \"full\"\n");
    let installed = Sources { system_config: Some(system.path().into()), ..Default::default() };
    assert_eq!(Settings::load(&installed).expect("load").data_dir, PathBuf::from("/var/lib/birdhub"));
    let chosen = Sources { config_file: Some(system.path().into()), ..Default::default() };
    assert_eq!(Settings::load(&chosen).expect("load").data_dir, PathBuf::from("./data"));
    let said = file("data_dir = \"/srv/birds\"\n");
    let in_file = Sources { system_config: Some(said.path().into()), ..Default::default() };
    assert_eq!(Settings::load(&in_file).expect("load").data_dir, PathBuf::from("/srv/birds"));
}

#[test]
fn bad_values_fail_naming_the_key() {
    let files = ["[http]\nbind = \"nowhere\"\n", "mode = \"turbo\"\n", "[http]\nbindd = \"x\"\n", "[http\n"].map(file);
    let from_file = |i: usize| Sources { config_file: Some(files[i].path().into()), ..Default::default() };
    let from_env = |k: &str, v: &str| Sources { env: env(&[(k, v)]), ..Default::default() };
    let cases: Vec<(Sources, &str)> = vec![
        (from_file(0), "http.bind"),
        (from_file(1), "mode"),
        (from_file(2), "bindd"),
        (from_file(3), "config file"),
        (from_env("LIVE_AUDIO_TIMEOUT_MS", "soon"), "LIVE_AUDIO_TIMEOUT_MS"),
        (from_env("BIRDHUB_NOPE", "1"), "BIRDHUB_NOPE"),
        (from_env("MFA_ENCRYPTION_KEY", "short"), "security.mfa_encryption_key"),
        (from_env("BIRDHUB_INFERENCE__THRESHOLD", "7"), "inference.threshold"),
        (from_env("BIRDHUB_SPECIES_IMAGES__SOURCE_URL", "ftp://x/{scientific_name}"), "species_images.source_url"),
        (from_env("BIRDHUB_SPECIES_IMAGES__SOURCE_URL", "https://x/birds"), "species_images.source_url"),
        (from_env("BIRDHUB_SPECIES_IMAGES__MAX_BYTES", "12"), "species_images.max_bytes"),
        (from_env("BIRDHUB_SPECIES_IMAGES__TIMEOUT_SECS", "0"), "species_images.timeout_secs"),
        (from_env("BIRDHUB_SPECIES_IMAGES__MAX_ATTEMPTS", "0"), "species_images.max_attempts"),
        (from_env("BIRDHUB_WEATHER__PROVIDER_URL", "archive-api.open-meteo.com/v1/archive"), "weather.provider_url"),
        (from_env("BIRDHUB_WEATHER__PROVIDER_URL", "ftp://example.org/archive"), "weather.provider_url"),
        (from_env("BIRDHUB_WEATHER__TIMEOUT_SECS", "0"), "weather.timeout_secs"),
        (from_env("BIRDHUB_WEATHER__TIMEOUT_SECS", "soon"), "BIRDHUB_WEATHER__TIMEOUT_SECS"),
        (from_env("BIRDHUB_RELEASES__MAX_APK_BYTES", "10"), "releases.max_apk_bytes"),
        (from_env("BIRDHUB_RELEASES__HUB_VERSION", "v1.0"), "releases.hub_version"),
        (from_env("BIRDHUB_RELEASES__SATELLITE_VERSION", "latest"), "releases.satellite_version"),
        (from_env("BIRDHUB_BACKUP__DAILY_AT", "3am"), "backup.daily_at"),
        (from_env("BIRDHUB_BACKUP__DAILY_AT", "25:00"), "backup.daily_at"),
        (from_env("BIRDHUB_BACKUP__KEEP", "0"), "backup.keep"),
        (Sources { config_file: Some("/no/such/birdhub.toml".into()), ..Default::default() }, "/no/such/birdhub.toml"),
    ];
    for (sources, needle) in &cases {
        let err = Settings::load(sources).expect_err(needle).to_string();
        assert!(err.contains(needle), "error {err:?} should name {needle:?}");
    }
}

#[test]
fn secrets_are_generated_once_private_and_redacted() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = Settings { data_dir: dir.path().into(), ..Settings::default() };
    s.security.internal_api_key = Secret::new("configured");
    ensure_secrets(&mut s).expect("generate");
    let jwt = s.security.jwt_secret.clone();
    assert_eq!(jwt.expose().len(), 64);
    assert_eq!(s.security.internal_api_key.expose(), "configured", "configured secrets win");

    let path = dir.path().join("secrets.toml");
    let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(!std::fs::read_to_string(&path).expect("read").contains("configured"));

    let mut again = Settings { data_dir: dir.path().into(), ..Settings::default() };
    ensure_secrets(&mut again).expect("reload");
    assert_eq!(again.security.jwt_secret, jwt, "a restart keeps the same secrets");
    assert!(!format!("{again:?}").contains(jwt.expose()), "Debug never prints a secret");
}

#[test]
fn mdns_is_on_by_default_and_turned_off_by_env_or_file() {
    assert!(Settings::default().http.mdns, "the app finds the hub without an IP address");
    let s =
        Settings::load(&Sources { env: env(&[("BIRDHUB_HTTP__MDNS", "false")]), ..Default::default() }).expect("load");
    assert!(!s.http.mdns);
    let f = file("[http]\nmdns = false\n");
    let s = Settings::load(&Sources { config_file: Some(f.path().into()), ..Default::default() }).expect("load");
    assert!(!s.http.mdns);
}

#[test]
fn map_tiles_need_a_template_and_a_credit() {
    assert!(Settings::default().http.map_tiles.is_empty(), "no tiles unless configured");
    for bad in [
        "[http]\nmap_tiles = \"ftp://x/{z}/{x}/{y}\"\nmap_attribution = \"c\"\n",
        "[http]\nmap_tiles = \"https://t.example/{z}/{x}.png\"\nmap_attribution = \"c\"\n",
        "[http]\nmap_tiles = \"https://t.example/{z}/{x}/{y}.png\"\n",
    ] {
        let f = file(bad);
        let err = Settings::load(&Sources { config_file: Some(f.path().into()), ..Default::default() })
            .expect_err(bad)
            .to_string();
        assert!(err.contains("http.map_"), "{err}");
    }
    let f = file("[http]\nmap_tiles = \"https://t.example/{z}/{x}/{y}.png\"\nmap_attribution = \"© T\"\n");
    assert_eq!(
        Settings::load(&Sources { config_file: Some(f.path().into()), ..Default::default() })
            .expect("valid")
            .http
            .map_attribution,
        "© T"
    );
}

#[test]
fn daily_backups_are_off_by_default_and_go_under_the_data_dir() {
    let s = Settings::default();
    assert_eq!((s.backup.daily_at.as_str(), s.backup.keep), ("", 7));
    assert_eq!(s.backup.dir_in(std::path::Path::new("/var/lib/birdhub")), PathBuf::from("/var/lib/birdhub/backups"));
    let f = file("[backup]\ndaily_at = \"03:30\"\ndir = \"/mnt/usb\"\nkeep = 3\n");
    let s = Settings::load(&Sources { config_file: Some(f.path().into()), ..Default::default() }).expect("load");
    assert_eq!((s.backup.daily_at.as_str(), s.backup.keep), ("03:30", 3));
    assert_eq!(s.backup.dir_in(&s.data_dir), PathBuf::from("/mnt/usb"));
}

#[test]
fn metrics_are_off_by_default_and_allow_lists_come_from_file_or_env() {
    let s = Settings::default();
    assert!(!s.metrics.enabled && s.metrics.allow.is_empty());
    let f = file("[metrics]\nenabled = true\nallow = [\"192.168.1.0/24\"]\n");
    let from_file =
        Settings::load(&Sources { config_file: Some(f.path().into()), ..Default::default() }).expect("load");
    assert!(from_file.metrics.enabled);
    assert!(from_file.metrics.allows("192.168.1.77".parse().expect("ip")));
    assert!(!from_file.metrics.allows("192.168.2.1".parse().expect("ip")));
    let s = Settings::load(&Sources {
        config_file: Some(f.path().into()),
        env: env(&[("BIRDHUB_METRICS__ALLOW", "127.0.0.1, ::1")]),
        ..Default::default()
    })
    .expect("load");
    assert_eq!(s.metrics.allow, ["127.0.0.1", "::1"], "the environment replaces the file's list");
    assert!(s.metrics.allows("::ffff:127.0.0.1".parse().expect("ip")), "IPv4 seen through an IPv6 socket");
    assert!(!s.metrics.allows("192.168.1.77".parse().expect("ip")));
    let err = Settings::load(&Sources { env: env(&[("BIRDHUB_METRICS__ALLOW", "localhost")]), ..Default::default() })
        .expect_err("a host name is not an address");
    assert!(err.to_string().contains("metrics.allow"), "{err}");
}

#[test]
fn the_integrations_never_share_the_satellites_tree() {
    let mut s = Settings::default();
    s.integrations.feed.root = "birdhub".into();
    let err = s.validate().expect_err("feed root = topic root");
    assert!(err.to_string().contains("integrations.feed.root"), "{err}");
    let mut s = Settings::default();
    s.integrations.home_assistant.discovery_prefix = "home/assistant".into();
    assert!(s.validate().is_err());
    let mut s = Settings::default();
    s.integrations.bridge.host = "mqtt://ha.local:1883".into();
    let err = s.validate().expect_err("a URL is not a host");
    assert!(err.to_string().contains("integrations.bridge.host"), "{err}");
    s.integrations.bridge.host = "ha.local".into();
    s.validate().expect("a host name");
}

#[test]
fn the_mqtt_websocket_listens_where_mqtt_was_told_to_unless_it_is_set_on_its_own() {
    let ws = |sources: &Sources| Settings::load(sources).expect("load").mqtt.ws_bind.to_string();
    assert_eq!(ws(&Sources::default()), "0.0.0.0:8083", "the default listens everywhere");

    let flag = CliOverrides { mqtt_bind: Some("127.0.0.1:1884".parse().expect("addr")), ..Default::default() };
    let told = Sources { cli: flag.clone(), ..Default::default() };
    assert_eq!(ws(&told), "127.0.0.1:8083", "--mqtt-bind 127.0.0.1:… keeps the WebSocket local too");
    let by_env = Sources { env: env(&[("BIRDHUB_MQTT__BIND", "[::1]:1883")]), ..Default::default() };
    assert_eq!(ws(&by_env), "[::1]:8083");
    let in_file = file("[mqtt]\nbind = \"192.168.1.20:1883\"\n");
    assert_eq!(ws(&Sources { config_file: Some(in_file.path().into()), ..Default::default() }), "192.168.1.20:8083");

    // Set on its own, in any layer, the WebSocket's address is kept as given.
    let own = file("[mqtt]\nws_bind = \"0.0.0.0:9083\"\n");
    assert_eq!(
        ws(&Sources { config_file: Some(own.path().into()), cli: flag.clone(), ..Default::default() }),
        "0.0.0.0:9083"
    );
    let own_env = Sources { env: env(&[("BIRDHUB_MQTT__WS_BIND", "0.0.0.0:8083")]), cli: flag, ..Default::default() };
    assert_eq!(ws(&own_env), "0.0.0.0:8083");
}
