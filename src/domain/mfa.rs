//! The shapes of second factors, with no I/O: a TOTP code is 6 digits; a backup code is 10
//! characters of an alphabet without look-alikes, shown in two groups (`k7m2p-x9q4r`) and accepted
//! with or without the dash, spaces or capitals.

/// Backup codes issued at enrolment and on regeneration.
pub const BACKUP_CODES: usize = 10;
/// Characters of a backup code: no 0/o, 1/l/i, so a code read off paper is typed right.
pub const BACKUP_ALPHABET: &[u8] = b"23456789abcdefghjkmnpqrstuvwxyz";
const BACKUP_LEN: usize = 10;
/// How long a remembered device skips the second factor.
pub const REMEMBER_DAYS: i64 = 30;
/// How long a started enrolment (its pending secret) waits for the first code.
pub const PENDING_MINUTES: u64 = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    #[error("a code from the authenticator app is 6 digits")]
    NotSixDigits,
    #[error("a backup code is 10 letters and digits, like k7m2p-x9q4r")]
    NotABackupCode,
}

/// The 6 digits of a TOTP code (spaces allowed, as apps show `123 456`).
pub fn totp_code(raw: &str) -> Result<String, CodeError> {
    let code: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
    if code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()) { Ok(code) } else { Err(CodeError::NotSixDigits) }
}

/// A backup code as stored (lower case, no dash), from what the person typed.
pub fn backup_code(raw: &str) -> Result<String, CodeError> {
    let code: String = raw.chars().filter(|c| !c.is_whitespace() && *c != '-').flat_map(char::to_lowercase).collect();
    if code.len() == BACKUP_LEN && code.bytes().all(|b| BACKUP_ALPHABET.contains(&b)) {
        Ok(code)
    } else {
        Err(CodeError::NotABackupCode)
    }
}

/// A backup code from `BACKUP_LEN` indexes into the alphabet, as shown to the person.
pub fn format_backup_code(indexes: &[u8]) -> String {
    let chars: String =
        indexes.iter().take(BACKUP_LEN).map(|i| BACKUP_ALPHABET[*i as usize % BACKUP_ALPHABET.len()] as char).collect();
    let (a, b) = chars.split_at(chars.len().min(5));
    format!("{a}-{b}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totp_codes_are_six_digits() {
        assert_eq!(totp_code(" 123 456 "), Ok("123456".into()));
        for bad in ["12345", "1234567", "12a456", "", "１２３４５６"] {
            assert_eq!(totp_code(bad), Err(CodeError::NotSixDigits), "{bad:?}");
        }
    }

    #[test]
    fn backup_codes_round_trip_through_their_printed_form() {
        let shown = format_backup_code(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 30]);
        assert_eq!(shown, "23456-789az");
        assert_eq!(backup_code(&shown), Ok("23456789az".into()));
        assert_eq!(backup_code(" 23456 789AZ "), Ok("23456789az".into()));
        for bad in ["23456-789a", "23456-789a0", "1234567890", "23456-789azz"] {
            assert_eq!(backup_code(bad), Err(CodeError::NotABackupCode), "{bad:?}");
        }
    }
}
