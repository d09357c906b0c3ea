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
/// Reset links live this long and work once.
pub fn reset_token_ttl() -> Duration {
    Duration::minutes(60)
}
/// Invite links live this long.
pub fn invite_ttl() -> Duration {
    Duration::days(7)
}
