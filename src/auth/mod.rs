//! Who the caller is and what they may do. For now: password hashing and the password rule;
//! tokens, API keys, MFA and the role guards join here as their issues land.

pub mod password;
