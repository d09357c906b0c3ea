//! Species names (SPEC 4.9): the installed label languages, and translating one name or up to
//! [`MAX_BULK`] at once. A name may be a species code, a scientific name or a common name in any
//! installed language. Reading label files blocks, so callers run these on a blocking thread.

use serde::{Deserialize, Serialize};

use crate::{
    domain::languages::{self, Language},
    inference::{labels::Labels, translations::Translations},
    satellite::gate::categories,
};

/// Names one bulk call may translate.
pub const MAX_BULK: usize = 500;

/// Most matches one search answers with.
pub const MAX_SEARCH: usize = 50;

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

/// Which of the model's classes a search looks through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassKind {
    /// Birds: what detections, thresholds and species lists name.
    #[default]
    Bird,
    /// The classes that are not birds (dog, engine, human vocal, frogs, insects ...).
    Other,
}

/// The model's classes of `kind` whose name in `lang`, scientific name, code or English name
/// holds `query` (any letter case), best first: names that start with it, then those whose words
/// start with the typed words, then the rest, each alphabetically by the name in `lang`. An empty
/// query finds nothing among the birds (there are thousands) and every other class.
pub fn search(
    names: &Translations,
    query: &str,
    lang: &str,
    kind: ClassKind,
    limit: usize,
) -> Result<Vec<Translated>, SpeciesError> {
    search_ranked(names, query, lang, kind, limit, &|_| 0)
}

/// [`search`] with the matches grouped by `tier` first (lower first: the team's own species,
/// see `species_rank`); among the other classes, sounds (dog, engine, siren, voices) come before
/// frogs and insects.
pub fn search_ranked(
    names: &Translations,
    query: &str,
    lang: &str,
    kind: ClassKind,
    limit: usize,
    tier: &dyn Fn(&str) -> u8,
) -> Result<Vec<Translated>, SpeciesError> {
    let lang = installed_language(names, lang)?;
    let classes = names.classes().ok_or(SpeciesError::NoModel)?;
    let q = query.trim().to_lowercase();
    if q.is_empty() && kind == ClassKind::Bird {
        return Ok(Vec::new());
    }
    let code_q = q.replace(' ', "_");
    let typed: Vec<&str> = q.split_whitespace().collect();
    let mut found: Vec<((u8, u8, u8), String, Translated)> = Vec::new();
    for label in classes.iter() {
        let category = categories::category_of(&label.scientific);
        if category.is_none() != (kind == ClassKind::Bird) {
            continue;
        }
        let common = names.common_name(&lang, &label.code).unwrap_or_else(|| label.common.clone());
        let lower = common.to_lowercase();
        let scientific = label.scientific.to_lowercase();
        let words: Vec<&str> = lower.split([' ', '-', '\'']).collect();
        let rank = if q.is_empty() || lower.starts_with(&q) {
            0
        } else if words.iter().any(|w| w.starts_with(&q))
            || typed.iter().all(|t| words.iter().any(|w| w.starts_with(t)))
        {
            1
        } else if scientific.starts_with(&q) {
            2
        } else if lower.contains(&q) {
            3
        } else if scientific.contains(&q) || label.code.contains(&code_q) || label.common.to_lowercase().contains(&q) {
            4
        } else {
            continue;
        };
        let t = Translated {
            species_code: label.code.clone(),
            scientific_name: label.scientific.clone(),
            lang: lang.clone(),
            common_name: common,
        };
        found.push(((tier(&label.code), sound_rank(category, &label.scientific), rank), lower, t));
    }
    found.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    Ok(found.into_iter().take(limit.clamp(1, MAX_SEARCH)).map(|(_, _, t)| t).collect())
}

/// 0 for a sound a person thinks of first when something drowns the birds (a dog, an engine,
/// a siren, a voice), 1 for sounds that name no source (noise), 2 for frogs, insects and other
/// animals; 0 for every bird.
fn sound_rank(category: Option<categories::Category>, scientific: &str) -> u8 {
    use categories::Category::*;
    match category {
        None | Some(Anthropogenic | HumanVoice) => 0,
        Some(OtherAnimal) if scientific == "Dog" => 0,
        Some(Other) => 1,
        Some(OtherAnimal | Amphibian | Insect) => 2,
    }
}

/// The species codes whose common name in one of `langs` holds `needle` (any letter case), or
/// whose code does: the Detections list's name filter, so "Kohlmeise" finds Parus major for a
/// German speaker. Reads label files on first use of a language: call it on a blocking thread.
pub fn codes_named(names: &Translations, needle: &str, langs: &[String]) -> Vec<String> {
    let needle = needle.trim().to_lowercase();
    // Nothing is remembered without a model: one installed later must be searched.
    let Some(classes) = names.classes().filter(|_| !needle.is_empty()) else { return Vec::new() };
    let key = format!("{needle}\u{0}{}", langs.join(","));
    names.searched(key, || scan_names(names, &classes, &needle, langs)).to_vec()
}

/// [`codes_named`] the first time: every class, by code, scientific and common name.
fn scan_names(names: &Translations, classes: &Labels, needle: &str, langs: &[String]) -> Vec<String> {
    let code_needle = needle.replace([' ', '-'], "_");
    classes
        .iter()
        .filter(|l| {
            l.code.contains(&code_needle)
                || l.scientific.to_lowercase().contains(needle)
                || l.common.to_lowercase().contains(needle)
                || langs
                    .iter()
                    .any(|lang| names.common_name(lang, &l.code).is_some_and(|n| n.to_lowercase().contains(needle)))
        })
        .map(|l| l.code.clone())
        .collect()
}

/// The languages a person reads species names in: their own (My account), then the team's
/// primary and secondary languages; installed or not (a missing one adds nothing).
pub async fn reading_languages(
    store: &crate::store::Store,
    tenant: crate::ids::TenantId,
    user: Option<crate::ids::UserId>,
) -> crate::store::Result<Vec<String>> {
    use crate::{
        domain::{preferences::Preferences, settings::TenantSettings},
        store,
    };
    let (own, team) = store
        .call(move |c| {
            let own = match user {
                Some(u) => Some(Preferences::from_stored(&store::users::get(c, u)?.preferences_json).language),
                None => None,
            };
            Ok((own, store::settings::load::<TenantSettings>(c, &tenant.to_string())?))
        })
        .await?;
    let mut langs: Vec<String> = Vec::new();
    for lang in own.into_iter().chain([team.primary_language]).chain(team.secondary_language) {
        if !lang.is_empty() && !langs.contains(&lang) {
            langs.push(lang);
        }
    }
    Ok(langs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> (tempfile::TempDir, Translations) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("labels")).expect("mkdir");
        let en = "Turdus merula_Eurasian Blackbird\nTurdus philomelos_Song Thrush\nStrix aluco_Tawny Owl\nDog_Dog\nEngine_Engine\n";
        let de = "Turdus merula_Amsel\nTurdus philomelos_Singdrossel\nStrix aluco_Waldkauz\nDog_Hund\nEngine_Motor\n";
        std::fs::write(dir.path().join("labels/en.txt"), en).expect("en");
        std::fs::write(dir.path().join("labels/de.txt"), de).expect("de");
        let t = Translations::new(&dir.path().display().to_string());
        (dir, t)
    }

    fn codes(found: &[Translated]) -> Vec<&str> {
        found.iter().map(|t| t.species_code.as_str()).collect()
    }

    #[test]
    fn a_search_finds_birds_by_any_of_their_names_in_the_asked_language() {
        let (_dir, t) = labels();
        let found = search(&t, "drossel", "de", ClassKind::Bird, 10).expect("search");
        assert_eq!(codes(&found), ["turdus_philomelos"]);
        assert_eq!(found[0].common_name, "Singdrossel");
        let found = search(&t, "turdus", "de", ClassKind::Bird, 10).expect("search");
        assert_eq!(
            codes(&found),
            ["turdus_merula", "turdus_philomelos"],
            "by scientific name, alphabetical by German name"
        );
        let found = search(&t, "blackbird", "de", ClassKind::Bird, 10).expect("search");
        assert_eq!(codes(&found), ["turdus_merula"], "the English name finds it too");
        assert!(search(&t, "hund", "de", ClassKind::Bird, 10).expect("search").is_empty(), "a dog is no bird");
        assert!(search(&t, "", "de", ClassKind::Bird, 10).expect("search").is_empty());
        assert_eq!(search(&t, "t", "en", ClassKind::Bird, 1).expect("search").len(), 1, "the limit holds");
    }

    #[test]
    fn the_other_classes_are_listed_whole_and_unknown_languages_refused() {
        let (_dir, t) = labels();
        let found = search(&t, "", "de", ClassKind::Other, 50).expect("search");
        assert_eq!(codes(&found), ["dog", "engine"]);
        assert_eq!(found[0].common_name, "Hund");
        assert!(matches!(search(&t, "x", "xx", ClassKind::Bird, 5), Err(SpeciesError::UnknownLanguage(_))));
    }
}
