//! Use cases: one function per thing a person or a device does (sign up, register a satellite,
//! vote, record a batch of detections ...). Each owns its transaction, takes only the handles it
//! needs (`&Store`, `&Clock`, a `TenantId` ...) and names every refusal in its own error enum.
//! `api`, `mqtt` and `jobs` call these; `api` maps the enums to statuses and codes in one place
//! (`api/usecase_errors.rs`). No HTTP or MQTT type, no string error and no `AppState` in here.

/// `impl From<store::Error>` for a use case's error enum: the store's `NotFound` (and, where given,
/// `Duplicate`) become what they mean for that use case; anything else is its `Store` variant.
macro_rules! from_store_error {
    ($ty:ident, not_found => $nf:ident $(, duplicate => $dup:ident)?) => {
        impl From<crate::store::Error> for $ty {
            fn from(e: crate::store::Error) -> Self {
                match e {
                    crate::store::Error::NotFound => Self::$nf,
                    $(crate::store::Error::Duplicate => Self::$dup,)?
                    other => Self::Store(other),
                }
            }
        }
    };
}
use from_store_error;

pub mod accounts;
pub mod chunks;
pub mod detections;
pub mod mfa;
pub mod monitor;
pub mod passkeys;
pub mod satellites;
pub mod verification;
