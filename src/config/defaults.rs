//! The built-in defaults: the first layer of [`Settings`], what `birdhub default-config` prints
//! and what a hub without a config file runs with.

use super::*;

impl Default for Settings {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("./data"),
            mode: Mode::Full,
            log_level: "info,mqtt5=warn,ort=warn".into(),
            http: HttpSettings {
                bind: SocketAddr::from(([0, 0, 0, 0], 8080)),
                max_body_bytes: 2 * 1024 * 1024,
                trust_proxy: false,
                public_url: String::new(),
                mdns: true,
                public_page_per_minute: 120,
                map_tiles: String::new(),
                map_attribution: String::new(),
            },
            mqtt: MqttSettings {
                bind: SocketAddr::from(([0, 0, 0, 0], 1883)),
                ws_bind: SocketAddr::from(([0, 0, 0, 0], 8083)),
                topic_root: "birdhub".into(),
                public_url: String::new(),
                tls_cert: String::new(),
                tls_key: String::new(),
                upstream: "127.0.0.1:1883".into(),
                external: String::new(),
                external_username: String::new(),
                external_password: Secret::default(),
            },
            security: SecuritySettings {
                mfa_encryption_key: Secret::default(),
                internal_api_key: Secret::default(),
                jwt_secret: Secret::default(),
            },
            smtp: SmtpSettings {
                host: String::new(),
                port: 587,
                username: String::new(),
                password: Secret::default(),
                from: "birdhub@localhost".into(),
                security: "starttls".into(),
            },
            live_audio: LiveAudioSettings { timeout_ms: 60_000 },
            inference: InferenceSettings {
                model_dir: String::new(),
                workers: WorkerCount::Auto,
                lease_seconds: crate::inference::remote::DEFAULT_LEASE_SECONDS,
                threshold: 0.7,
                precision: crate::inference::Precision::Fp32,
            },
            cache: CacheSettings { registry_prefix: "birdhub".into(), max_entries: 100_000 },
            species_images: SpeciesImageSettings {
                source_url: String::new(),
                max_bytes: 2 * 1024 * 1024,
                timeout_secs: 15,
                max_attempts: 10,
            },
            weather: WeatherSettings { provider_url: String::new(), timeout_secs: 10 },
            retention: RetentionSettings { keep_audio_days: 30, min_free_disk_mb: 1024, keep_audit_days: 365 },
            releases: ReleaseSettings {
                max_apk_bytes: 200 * 1024 * 1024,
                hub_version: String::new(),
                satellite_version: String::new(),
                update_timeout_minutes: 15,
            },
            imports: ImportSettings { max_upload_bytes: 10 * 1024 * 1024 * 1024, max_concurrent: 1 },
            backup: BackupSettings { daily_at: String::new(), dir: String::new(), keep: 7 },
            metrics: MetricsSettings { enabled: false, allow: Vec::new() },
            birdweather: super::BirdweatherSettings::default(),
            integrations: IntegrationsSettings {
                team: String::new(),
                readonly_password: Secret::default(),
                home_assistant: HomeAssistantSettings { enabled: false, discovery_prefix: "homeassistant".into() },
                feed: FeedSettings { enabled: false, root: "birdhub-feed".into() },
                bridge: BridgeSettings {
                    host: String::new(),
                    port: 1883,
                    username: String::new(),
                    password: Secret::default(),
                    tls: false,
                    ca_file: String::new(),
                    client_id: "birdhub-bridge".into(),
                },
            },
        }
    }
}
