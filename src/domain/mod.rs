//! Rules with no I/O: roles, settings and their defaults and validation. Depends on nothing of ours.

pub mod calibration;
pub mod consensus;
pub mod preferences;
pub mod role;
pub mod satellite_config;
pub mod season;
pub mod settings;
pub mod validate;

pub use role::Role;
