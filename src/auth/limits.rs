//! Login security numbers (SPEC 5.3, 8) in one place.

use chrono::Duration;

/// Login attempts allowed per IP per window; beyond that 429.
pub const LOGIN_ATTEMPTS_PER_IP: u32 = 20;
pub fn login_window() -> Duration {
    Duration::minutes(15)
}
/// Failed passwords in a row that lock an account (423).
pub const FAILURES_BEFORE_LOCK: u32 = 5;
pub fn lock_duration() -> Duration {
    Duration::minutes(15)
}
/// Forgot-password requests per IP per window; beyond that requests are still answered 204 but
/// no mail is sent (the SPEC's "always 204").
pub const FORGOT_PER_IP: u32 = 5;
pub fn forgot_window() -> Duration {
    Duration::minutes(15)
}
/// Wrong second-factor codes (or passkey answers) one sign-in step (`mfaToken`) may try; after
/// that the person logs in again. Each also counts toward the account's lock.
pub const MFA_GUESSES_PER_TOKEN: u64 = 5;
/// Registrations that reach the password hash per address per window; beyond that 429. A request
/// refused by the gate (registration closed, a bad invite) costs nothing and is not counted.
pub const REGISTER_PER_IP: u64 = 10;
pub fn register_window() -> std::time::Duration {
    std::time::Duration::from_secs(3600)
}
/// Reset-password attempts per address per window; beyond that 429 (and no audit entry).
pub const RESETS_PER_IP: u64 = 20;
pub fn reset_window() -> std::time::Duration {
    std::time::Duration::from_secs(15 * 60)
}
/// Reset links live this long and work once.
pub fn reset_token_ttl() -> Duration {
    Duration::minutes(60)
}
/// Invite links live this long.
pub fn invite_ttl() -> Duration {
    Duration::days(7)
}
