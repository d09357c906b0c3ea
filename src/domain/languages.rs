//! The languages of the model's label files (`labels/<code>.txt`), with their names in English
//! and in themselves, for `GET /species/languages`. The codes are the file stems the model ships:
//! mostly ISO 639-1, with `in` for Indonesian (the older code the label set uses), `en_uk`,
//! `pt_BR` and `pt_PT`.

use serde::Serialize;

/// One label language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Language {
    pub code: &'static str,
    pub name: &'static str,
    pub native_name: &'static str,
}

const fn lang(code: &'static str, name: &'static str, native_name: &'static str) -> Language {
    Language { code, name, native_name }
}

/// Every language BirdNET 2.4 ships labels in, by code.
pub const KNOWN: [Language; 38] = [
    lang("af", "Afrikaans", "Afrikaans"),
    lang("ar", "Arabic", "العربية"),
    lang("bg", "Bulgarian", "Български"),
    lang("ca", "Catalan", "Català"),
    lang("cs", "Czech", "Čeština"),
    lang("da", "Danish", "Dansk"),
    lang("de", "German", "Deutsch"),
    lang("el", "Greek", "Ελληνικά"),
    lang("en", "English", "English"),
    lang("en_uk", "English (UK)", "English (UK)"),
    lang("es", "Spanish", "Español"),
    lang("fi", "Finnish", "Suomi"),
    lang("fr", "French", "Français"),
    lang("he", "Hebrew", "עברית"),
    lang("hr", "Croatian", "Hrvatski"),
    lang("hu", "Hungarian", "Magyar"),
    lang("in", "Indonesian", "Bahasa Indonesia"),
    lang("is", "Icelandic", "Íslenska"),
    lang("it", "Italian", "Italiano"),
    lang("ja", "Japanese", "日本語"),
    lang("ko", "Korean", "한국어"),
    lang("lt", "Lithuanian", "Lietuvių"),
    lang("ml", "Malayalam", "മലയാളം"),
    lang("nl", "Dutch", "Nederlands"),
    lang("no", "Norwegian", "Norsk"),
    lang("pl", "Polish", "Polski"),
    lang("pt_BR", "Portuguese (Brazil)", "Português (Brasil)"),
    lang("pt_PT", "Portuguese (Portugal)", "Português (Portugal)"),
    lang("ro", "Romanian", "Română"),
    lang("ru", "Russian", "Русский"),
    lang("sk", "Slovak", "Slovenčina"),
    lang("sl", "Slovenian", "Slovenščina"),
    lang("sr", "Serbian", "Srpski"),
    lang("sv", "Swedish", "Svenska"),
    lang("th", "Thai", "ไทย"),
    lang("tr", "Turkish", "Türkçe"),
    lang("uk", "Ukrainian", "Українська"),
    lang("zh", "Chinese", "中文"),
];

/// The language with this code; case-insensitive, `-` read as `_` (`pt-br` is `pt_BR`).
pub fn find(code: &str) -> Option<Language> {
    let wanted = code.trim().replace('-', "_");
    KNOWN.iter().copied().find(|l| l.code.eq_ignore_ascii_case(&wanted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_found_in_any_case() {
        let mut codes: Vec<&str> = KNOWN.iter().map(|l| l.code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), 38);
        assert_eq!(find("pt-br").map(|l| l.code), Some("pt_BR"));
        assert_eq!(find("DE").map(|l| l.native_name), Some("Deutsch"));
        assert_eq!(find("xx"), None);
        assert_eq!(find(""), None);
    }
}
