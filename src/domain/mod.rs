//! Rules with no I/O: roles, settings and their defaults and validation, export formats. Depends on nothing of ours.

pub mod alert_rules;
pub mod biodiversity;
pub mod calibration;
pub mod channels;
pub mod clock_sanity;
pub mod consensus;
pub mod correlation;
pub mod cron_schedule;
pub mod detection_flags;
pub mod detection_settings;
pub mod device;
pub mod exports;
pub mod image_size;
pub mod languages;
pub mod learned_threshold;
pub mod mfa;
pub mod outbound;
pub mod preferences;
pub mod role;
pub mod satellite_config;
pub mod schedule;
pub mod season;
pub mod serde_words;
pub mod sessions;
pub mod settings;
pub mod sort;
pub mod species_images;
pub mod species_threshold;
pub mod sun;
pub mod user_agent;
pub mod validate;
pub mod versions;
pub mod zone;

pub use device::DeviceKind;
pub use role::Role;
