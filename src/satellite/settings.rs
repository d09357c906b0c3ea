//! The satellite's own config file (`/etc/birdhub/satellite.toml`, or `satellite-NAME.toml` for
//! `--instance NAME`), written by `birdhub satellite register` with mode 0600: where the hub is,
//! the MQTT credentials and the satellite API key, and how to capture.
//!
//! The directory is `/etc/birdhub`, or `$BIRDHUB_SATELLITE_CONFIG_DIR` when that is set (tests,
//! unprivileged setups). [`SatelliteSettings::save`] writes atomically: a temporary file in the
//! same directory, created with mode 0600 before any secret is written, fsynced, then renamed
//! over the old file (and the directory fsynced). [`SatelliteSettings::load`] warns when the
//! file is readable by group or others.
//!
//! [`defaults_for`] gives the values `register` fills in when the user names none.

use std::{
    fs,
    io::Write,
    os::unix::fs::{OpenOptionsExt, PermissionsExt},
    path::{Path, PathBuf},
};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::capture::{Pace, Source};

/// The default config directory.
pub const CONFIG_DIR: &str = "/etc/birdhub";
/// Overrides [`CONFIG_DIR`] when set.
pub const CONFIG_DIR_ENV: &str = "BIRDHUB_SATELLITE_CONFIG_DIR";
/// The default data directory (an instance gets a subdirectory named after it).
pub const DATA_DIR: &str = "/var/lib/birdhub-satellite";
/// The default `update_command`. It runs apt in a transient systemd unit of its own
/// (`--collect` removes the unit when it ends, even after a failure), so the upgrade survives
/// the package's postinst restarting `birdhub-satellite`, i.e. the very process that started
/// it. `--wait` makes it end with apt's exit status, so a failed upgrade is reported to the hub
/// (apt's own output stays in `journalctl -u birdhub-satellite-update`).
/// `BIRDHUB_TARGET_VERSION` is in its environment but apt installs the newest version the
/// configured repositories offer.
pub const DEFAULT_UPDATE_COMMAND: &str =
    "systemd-run --unit=birdhub-satellite-update --collect --wait apt-get install -y --only-upgrade birdhub";
/// The default `version_command`.
pub const DEFAULT_VERSION_COMMAND: &str = "birdhub --version";
/// The default systemd unit (an instance runs as `birdhub-satellite@NAME`).
pub const DEFAULT_UNIT: &str = "birdhub-satellite";
/// The default `resend_per_sec`.
pub const DEFAULT_RESEND_PER_SEC: u32 = 20;
/// The default `max_attempts`.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

/// The values `register` uses for the fields the user does not give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsDefaults {
    pub data_dir: PathBuf,
    pub update_command: String,
    pub version_command: String,
    pub unit: String,
    pub resend_per_sec: u32,
    pub max_attempts: u32,
}

/// The defaults of an instance (`None`: the default satellite of the machine). The instance
/// name must have passed [`validate_instance`].
pub fn defaults_for(instance: Option<&str>) -> SettingsDefaults {
    let (data_dir, unit) = match instance {
        Some(name) => (Path::new(DATA_DIR).join(name), format!("{DEFAULT_UNIT}@{name}")),
        None => (PathBuf::from(DATA_DIR), DEFAULT_UNIT.to_owned()),
    };
    SettingsDefaults {
        data_dir,
        update_command: DEFAULT_UPDATE_COMMAND.to_owned(),
        version_command: DEFAULT_VERSION_COMMAND.to_owned(),
        unit,
        resend_per_sec: DEFAULT_RESEND_PER_SEC,
        max_attempts: DEFAULT_MAX_ATTEMPTS,
    }
}

/// Checks an `--instance` name: 1 to 32 ASCII letters, digits, `-` or `_` (it becomes part of a
/// file name, a directory name and a systemd unit name).
pub fn validate_instance(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 32 {
        return Err(format!("instance name {name:?} must be 1 to 32 characters long"));
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_')) {
        return Err(format!("instance name {name:?} may hold only letters, digits, '-' and '_' (found {bad:?})"));
    }
    Ok(())
}

/// The directory the config files live in: `$BIRDHUB_SATELLITE_CONFIG_DIR` or `/etc/birdhub`.
pub fn config_dir() -> PathBuf {
    match std::env::var_os(CONFIG_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(CONFIG_DIR),
    }
}

/// The satellite's settings, as stored in its config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SatelliteSettings {
    /// The hub's HTTP base URL, e.g. `http://192.168.1.20:8080`.
    pub hub_url: String,
    /// The MQTT broker's host and port.
    pub mqtt_host: String,
    #[serde(default = "default_mqtt_port")]
    pub mqtt_port: u16,
    /// Who the satellite is (from `POST /satellites`).
    pub satellite_id: uuid::Uuid,
    pub tenant_id: uuid::Uuid,
    pub name: String,
    /// The stable id `register` sends so that registering again rotates the same satellite's
    /// credentials. Optional: a hand-written file has none, and `register` derives one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub device_id: String,
    /// The MQTT password and the satellite-scoped API key (secrets: the file is 0600).
    pub mqtt_password: String,
    pub api_key: String,
    /// `dir:PATH`, `alsa:DEVICE` or `rtsp:URL` (default `alsa:default`).
    #[serde(default = "default_source")]
    pub source: String,
    #[serde(default)]
    pub pace: Pace,
    #[serde(default)]
    pub loop_dir: bool,
    #[serde(default)]
    pub latitude: Option<f64>,
    #[serde(default)]
    pub longitude: Option<f64>,
    /// Where the outbox and capture state live.
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// The classifier gate's model directory ("" = look in the usual places; none = RMS only).
    #[serde(default)]
    pub model_dir: Option<String>,
    /// Run on `update` (SPEC 2.8), with `BIRDHUB_TARGET_VERSION` set.
    #[serde(default = "default_update_command")]
    pub update_command: String,
    /// Prints the installed version (reported in heartbeats after an update).
    #[serde(default = "default_version_command")]
    pub version_command: String,
    /// Answers `log-request` when set; otherwise `journalctl -u <unit>`.
    #[serde(default)]
    pub log_file: Option<PathBuf>,
    /// The systemd unit whose journal answers `log-request`.
    #[serde(default = "default_unit")]
    pub unit: String,
    /// Re-sends per second after a reconnect.
    #[serde(default = "default_resend_per_sec")]
    pub resend_per_sec: u32,
    /// `error` acks before a row counts as failed.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// The hub's `mqtt.topic_root` (the first topic level).
    #[serde(default = "default_topic_root")]
    pub topic_root: String,
    /// Record only once the system clock is synchronised (NTP), so no chunk carries a boot-time
    /// stamp (`clock_sync`). Turn it off on a machine that has no time synchronisation at all.
    #[serde(default = "default_true")]
    pub require_clock_sync: bool,
    /// A shell command that prints `yes` once the clock is synchronised (`no` while it is not);
    /// empty: `timedatectl show -p NTPSynchronized --value`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub clock_sync_command: String,
}

fn default_true() -> bool {
    true
}

fn default_topic_root() -> String {
    "birdhub".into()
}

fn default_mqtt_port() -> u16 {
    1883
}

fn default_source() -> String {
    "alsa:default".into()
}

fn default_data_dir() -> PathBuf {
    defaults_for(None).data_dir
}

fn default_update_command() -> String {
    DEFAULT_UPDATE_COMMAND.into()
}

fn default_version_command() -> String {
    DEFAULT_VERSION_COMMAND.into()
}

fn default_unit() -> String {
    DEFAULT_UNIT.into()
}

fn default_resend_per_sec() -> u32 {
    DEFAULT_RESEND_PER_SEC
}

fn default_max_attempts() -> u32 {
    DEFAULT_MAX_ATTEMPTS
}

impl SatelliteSettings {
    /// The config file of an instance (`None`: the default one): `satellite.toml` or
    /// `satellite-NAME.toml` in [`config_dir`]. The name must have passed [`validate_instance`].
    pub fn default_path(instance: Option<&str>) -> PathBuf {
        let file = match instance {
            Some(name) => format!("satellite-{name}.toml"),
            None => "satellite.toml".to_owned(),
        };
        config_dir().join(file)
    }

    /// Reads the config file; errors name the file and, for a bad value, the field.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        if let Ok(meta) = fs::metadata(path) {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                tracing::warn!(
                    "{} holds secrets but has mode {mode:04o}; run `chmod 600 {}`",
                    path.display(),
                    path.display()
                );
            }
        }
        let table: toml::Table =
            text.parse().map_err(|e| anyhow::anyhow!("{}: not valid TOML: {e}", path.display()))?;
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let field = e.path().to_string();
            if field == "." || field.is_empty() {
                anyhow::anyhow!("{}: {}", path.display(), e.inner())
            } else {
                anyhow::anyhow!("{}: field `{field}`: {}", path.display(), e.inner())
            }
        })
    }

    /// Writes the file atomically with mode 0600 (see the module docs), creating its directory.
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let text = toml::to_string_pretty(self).context("encoding the satellite settings")?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
        let _ = fs::remove_file(&tmp);
        let written = (|| -> std::io::Result<()> {
            let mut file = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
            // The umask can only take bits away; set 0600 explicitly before any secret is written.
            file.set_permissions(fs::Permissions::from_mode(0o600))?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            fs::rename(&tmp, path)?;
            fs::File::open(&dir)?.sync_all()
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(anyhow::Error::new(e).context(format!("writing {}", path.display())));
        }
        Ok(())
    }

    /// The parsed `source`.
    pub fn source(&self) -> Result<Source, String> {
        self.source.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(instance: Option<&str>) -> SatelliteSettings {
        let d = defaults_for(instance);
        SatelliteSettings {
            hub_url: "http://192.168.1.20:8080".into(),
            mqtt_host: "192.168.1.20".into(),
            mqtt_port: 1883,
            satellite_id: uuid::Uuid::new_v4(),
            tenant_id: uuid::Uuid::new_v4(),
            name: "Garden \"north\" mic".into(),
            device_id: "pi-garden".into(),
            mqtt_password: "s3cret'\"=\n".into(),
            api_key: "bh_sat_0123456789".into(),
            source: "alsa:plughw:1,0".into(),
            pace: Pace::Fast,
            loop_dir: true,
            latitude: Some(52.37),
            longitude: Some(-4.9),
            data_dir: d.data_dir,
            model_dir: Some(String::new()),
            update_command: d.update_command,
            version_command: d.version_command,
            log_file: None,
            unit: d.unit,
            resend_per_sec: d.resend_per_sec,
            max_attempts: d.max_attempts,
            topic_root: "bh".into(),
            require_clock_sync: true,
            clock_sync_command: String::new(),
        }
    }

    #[test]
    fn save_then_load_round_trips_with_mode_0600() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("etc").join("birdhub").join("satellite-garden.toml");
        let s = sample(Some("garden"));
        s.save(&path).expect("save");
        assert_eq!(SatelliteSettings::load(&path).expect("load"), s);
        let mode = fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);

        // Saving again replaces the file atomically and leaves no temporary file behind.
        let mut changed = s.clone();
        changed.api_key = "bh_sat_rotated".into();
        changed.model_dir = None;
        changed.log_file = Some(PathBuf::from("/var/log/sat.log"));
        changed.save(&path).expect("save again");
        assert_eq!(SatelliteSettings::load(&path).expect("load"), changed);
        let names: Vec<_> = fs::read_dir(path.parent().expect("parent"))
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["satellite-garden.toml"]);
    }

    #[test]
    fn save_tightens_a_loose_umask_result() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("satellite.toml");
        fs::write(&path, "old").expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        sample(None).save(&path).expect("save");
        assert_eq!(fs::metadata(&path).expect("meta").permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn load_errors_name_the_file_and_the_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("satellite.toml");
        sample(None).save(&path).expect("save");
        let text = fs::read_to_string(&path).expect("read");
        let bad = text
            .lines()
            .map(|l| if l.starts_with("satellite_id") { "satellite_id = \"not-a-uuid\"" } else { l })
            .collect::<Vec<_>>()
            .join("\n");
        fs::write(&path, bad).expect("write");
        let err = SatelliteSettings::load(&path).expect_err("bad uuid").to_string();
        assert!(err.contains("satellite.toml") && err.contains("satellite_id"), "{err}");

        let missing: String = text.lines().filter(|l| !l.starts_with("api_key")).collect::<Vec<_>>().join("\n");
        fs::write(&path, missing).expect("write");
        let err = SatelliteSettings::load(&path).expect_err("missing key").to_string();
        assert!(err.contains("satellite.toml") && err.contains("api_key"), "{err}");

        fs::write(&path, "hub_url = ").expect("write");
        let err = SatelliteSettings::load(&path).expect_err("bad toml").to_string();
        assert!(err.contains("satellite.toml"), "{err}");
        let err = SatelliteSettings::load(&dir.path().join("nope.toml")).expect_err("missing").to_string();
        assert!(err.contains("nope.toml"), "{err}");
    }

    #[test]
    fn a_hand_written_file_needs_no_device_id_and_gets_the_defaults() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("satellite.toml");
        let text = "hub_url = \"http://192.168.1.20:8080\"\nmqtt_host = \"192.168.1.20\"\nmqtt_port = 1883\n\
                    satellite_id = \"6f1c2d3e-0000-4000-8000-000000000001\"\n\
                    tenant_id = \"6f1c2d3e-0000-4000-8000-000000000002\"\nname = \"Garden Pi\"\n\
                    mqtt_password = \"pw\"\napi_key = \"bh_sat_x\"\ntopic_root = \"birdhub\"\n";
        fs::write(&path, text).expect("write");
        let s = SatelliteSettings::load(&path).expect("a minimal file loads");
        let d = defaults_for(None);
        assert_eq!(s.device_id, "");
        assert_eq!(
            (s.source.as_str(), &s.data_dir, s.unit.as_str()),
            ("alsa:default", &d.data_dir, "birdhub-satellite")
        );
        assert_eq!((s.update_command, s.version_command), (d.update_command, d.version_command));
        assert_eq!((s.resend_per_sec, s.max_attempts, s.latitude), (20, 5, None));
    }

    #[test]
    fn instances_get_their_own_paths_units_and_data_dirs() {
        let default = SatelliteSettings::default_path(None);
        let garden = SatelliteSettings::default_path(Some("garden"));
        assert_ne!(default, garden);
        assert_eq!(default.parent(), garden.parent());
        assert_eq!(default.parent(), Some(config_dir().as_path()));
        assert_eq!(default.file_name().and_then(|n| n.to_str()), Some("satellite.toml"));
        assert_eq!(garden.file_name().and_then(|n| n.to_str()), Some("satellite-garden.toml"));

        let (d, g) = (defaults_for(None), defaults_for(Some("garden")));
        assert_eq!(d.unit, "birdhub-satellite");
        assert_eq!(g.unit, "birdhub-satellite@garden");
        assert_eq!(d.data_dir, PathBuf::from("/var/lib/birdhub-satellite"));
        assert_eq!(g.data_dir, PathBuf::from("/var/lib/birdhub-satellite/garden"));
        assert_eq!((d.resend_per_sec, d.max_attempts), (20, 5));
        assert_eq!(d.version_command, "birdhub --version");
        assert!(d.update_command.contains("apt-get install -y --only-upgrade birdhub"));
    }

    #[test]
    fn instance_names_are_checked() {
        for ok in ["garden", "a", "mic-2_north", "ABC123", &"x".repeat(32)] {
            assert_eq!(validate_instance(ok), Ok(()), "{ok}");
        }
        for bad in ["", "../etc", "a b", "a/b", "naïve", "a.toml", &"x".repeat(33)] {
            assert!(validate_instance(bad).is_err(), "{bad:?}");
        }
    }
}
