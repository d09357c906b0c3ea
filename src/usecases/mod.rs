//! Use cases: one function per thing a person or a device does (sign up, register a satellite,
//! vote, record a batch of detections ...). Each owns its transaction, takes only the handles it
//! needs (`&Store`, `&Clock`, a `TenantId` ...) and names every refusal in its own error enum.
//! `api`, `mqtt` and `jobs` call these; `api` maps the enums to statuses and codes in one place
//! (`api/usecase_errors.rs`). No HTTP or MQTT type, no string error and no `AppState` in here.

pub mod accounts;
pub mod chunks;
pub mod detections;
pub mod satellites;
pub mod verification;
