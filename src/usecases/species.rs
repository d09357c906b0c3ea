//! Species names (SPEC 4.9): the installed label languages, and translating one name or up to
//! [`MAX_BULK`] at once. A name may be a species code, a scientific name or a common name in any
//! installed language. Reading label files blocks, so callers run these on a blocking thread.

use serde::Serialize;

use crate::{
    domain::languages::{self, Language},
    inference::translations::Translations,
};

/// Names one bulk call may translate.
pub const MAX_BULK: usize = 500;

#[derive(Debug, thiserror::Error)]
pub enum SpeciesError {
    #[error("unknown language {0:?}: GET /api/species/languages lists the installed ones")]
    UnknownLanguage(String),
    #[error("no species is called {0:?} (try a species code, a scientific name or a common name)")]
    UnknownSpecies(String),
    #[error("names must hold 1 to {MAX_BULK} names")]
    BadBulk,
    #[error("no label files are installed (the classifier model is missing): run birdhub model fetch")]
    NoModel,
}

/// An installed language.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstalledLanguage {
    pub code: String,
    pub name: String,
    pub native_name: String,
}

/// The installed label languages, with their English and native names.
pub fn languages(names: &Translations) -> Vec<InstalledLanguage> {
    names
        .installed()
        .into_iter()
        .map(|code| match languages::find(&code) {
            Some(Language { name, native_name, .. }) => {
                InstalledLanguage { code, name: name.into(), native_name: native_name.into() }
            }
            None => InstalledLanguage { name: code.clone(), native_name: code.clone(), code },
        })
        .collect()
}

/// One name, translated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Translated {
    pub species_code: String,
    pub scientific_name: String,
    pub lang: String,
    pub common_name: String,
}

/// Translates one name into `lang`.
pub fn translate(names: &Translations, input: &str, lang: &str) -> Result<Translated, SpeciesError> {
    let lang = installed_language(names, lang)?;
    one(names, input, &lang).ok_or_else(|| SpeciesError::UnknownSpecies(input.to_owned()))
}

/// One line of a bulk answer: the translation, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BulkLine {
    pub input: String,
    #[serde(flatten)]
    pub translated: Option<Translated>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Translates up to [`MAX_BULK`] names into `lang`; an unknown name is reported on its line.
pub fn translate_many(names: &Translations, inputs: &[String], lang: &str) -> Result<Vec<BulkLine>, SpeciesError> {
    if inputs.is_empty() || inputs.len() > MAX_BULK {
        return Err(SpeciesError::BadBulk);
    }
    let lang = installed_language(names, lang)?;
    Ok(inputs
        .iter()
        .map(|input| match one(names, input, &lang) {
            Some(t) => BulkLine { input: input.clone(), translated: Some(t), error: None },
            None => BulkLine { input: input.clone(), translated: None, error: Some("unknown species".into()) },
        })
        .collect())
}

fn installed_language(names: &Translations, lang: &str) -> Result<String, SpeciesError> {
    let installed = names.installed();
    if installed.is_empty() {
        return Err(SpeciesError::NoModel);
    }
    let wanted = languages::find(lang).map_or_else(|| lang.trim().to_owned(), |l| l.code.to_owned());
    installed.into_iter().find(|l| *l == wanted).ok_or_else(|| SpeciesError::UnknownLanguage(lang.to_owned()))
}

fn one(names: &Translations, input: &str, lang: &str) -> Option<Translated> {
    let species = names.resolve(input)?;
    let common = names.common_name(lang, &species.code)?;
    Some(Translated {
        species_code: species.code,
        scientific_name: species.scientific,
        lang: lang.to_owned(),
        common_name: common,
    })
}
