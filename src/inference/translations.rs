//! Common names in other languages, from the model's `labels/<lang>.txt` files, loaded on first
//! use and kept. Rare-species alerts name the bird in the team's primary and secondary languages,
//! and `/species/translate` finds a species by code, scientific name or a common name in any
//! installed language (that index, about 250,000 names, is built on its first use).

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
};

use super::{ModelDir, labels::Labels};

type Names = Arc<HashMap<String, String>>;

/// A species as the label files name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Species {
    pub code: String,
    pub scientific: String,
}

/// Every way to name a species (lower case) -> its code; and code -> scientific name.
#[derive(Default)]
struct Index {
    by_name: HashMap<String, String>,
    scientific: HashMap<String, String>,
}

/// Species code -> common name, per language. Cheap to clone.
#[derive(Clone)]
pub struct Translations {
    /// The model directory setting (empty: the usual places), resolved on first use.
    model_dir: String,
    /// Loaded languages; `None` for one without a label file, so it is not retried per call.
    loaded: Arc<Mutex<HashMap<String, Option<Names>>>>,
    /// The reverse index for [`Translations::resolve`], built once.
    index: Arc<std::sync::OnceLock<Index>>,
    /// The English label set (the model's classes in output order), once read.
    classes: Arc<Mutex<Option<Arc<Labels>>>>,
    /// Species searches already answered ([`Translations::searched`]).
    searches: moka::sync::Cache<String, Arc<Vec<String>>>,
}

/// Species searches remembered: the pages of one search, and the few terms a team uses.
const SEARCHES: u64 = 256;

impl std::fmt::Debug for Translations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Translations").field("model_dir", &self.model_dir).finish_non_exhaustive()
    }
}

impl Default for Translations {
    /// The model in the usual places.
    fn default() -> Self {
        Self::new("")
    }
}

impl Translations {
    pub fn new(model_dir: &str) -> Self {
        Self {
            model_dir: model_dir.to_owned(),
            loaded: Arc::default(),
            index: Arc::default(),
            classes: Arc::default(),
            searches: moka::sync::Cache::new(SEARCHES),
        }
    }

    /// The species codes a search `key` found, from `search` the first time and remembered after:
    /// the names never change while the hub runs, and every page of a list filtered by a name
    /// asks the same question again (a scan of every class in every reading language, about
    /// 2 ms here; issue 39).
    pub fn searched(&self, key: String, search: impl FnOnce() -> Vec<String>) -> Arc<Vec<String>> {
        self.searches.get_with(key, || Arc::new(search()))
    }

    /// The model's classes in output order (the English label file); `None` without a model.
    pub fn classes(&self) -> Option<Arc<Labels>> {
        let mut slot = self.classes.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = self.file("en").and_then(|p| Labels::load(&p).ok()).map(Arc::new);
        }
        slot.clone()
    }

    /// The languages whose label file is installed (file stems, sorted); empty without a model.
    pub fn installed(&self) -> Vec<String> {
        ModelDir::locate(&self.model_dir).map(|d| super::labels::languages(&d.path)).unwrap_or_default()
    }

    /// The species named by `input`: a species code, a scientific name, or a common name in any
    /// installed language, in any letter case. Blocking on first use (it reads every label file).
    pub fn resolve(&self, input: &str) -> Option<Species> {
        let index = self.index.get_or_init(|| self.build_index());
        let key = input.trim().to_lowercase();
        let code = index.by_name.get(&key).or_else(|| index.by_name.get(&super::labels::species_code(&key)))?;
        Some(Species { code: code.clone(), scientific: index.scientific.get(code).cloned().unwrap_or_default() })
    }

    fn build_index(&self) -> Index {
        let mut index = Index::default();
        // English first, so an English common name wins over the same words in another language.
        let mut langs = self.installed();
        langs.sort_by_key(|l| l != "en");
        for lang in langs {
            let Some(path) = self.file(&lang) else { continue };
            let Ok(labels) = Labels::load(&path) else { continue };
            for l in labels.iter() {
                index.scientific.entry(l.code.clone()).or_insert_with(|| l.scientific.clone());
                index.by_name.entry(l.code.clone()).or_insert_with(|| l.code.clone());
                index.by_name.entry(l.scientific.to_lowercase()).or_insert_with(|| l.code.clone());
                index.by_name.entry(l.common.to_lowercase()).or_insert_with(|| l.code.clone());
            }
        }
        index
    }

    /// The common name of `species_code` in `lang`, when the model ships that language.
    pub fn common_name(&self, lang: &str, species_code: &str) -> Option<String> {
        self.names(lang)?.get(species_code).cloned()
    }

    fn names(&self, lang: &str) -> Option<Names> {
        if lang.is_empty() || !lang.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(known) = loaded.get(lang) {
            return known.clone();
        }
        let names = self.file(lang).and_then(|path| match Labels::load(&path) {
            Ok(labels) => Some(Arc::new(labels.iter().map(|l| (l.code.clone(), l.common.clone())).collect())),
            Err(e) => {
                tracing::warn!(lang, error = %e, "no common names in this language");
                None
            }
        });
        loaded.insert(lang.to_owned(), names.clone());
        names
    }

    fn file(&self, lang: &str) -> Option<PathBuf> {
        let dir = ModelDir::locate(&self.model_dir).ok()?;
        let path = dir.file(&format!("labels/{lang}.txt"));
        path.is_file().then_some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_language_file_and_unknown_languages_give_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("labels")).expect("mkdir");
        std::fs::write(dir.path().join("labels/de.txt"), "Cardinalis cardinalis_Rotkardinal\n").expect("write");
        let t = Translations::new(&dir.path().display().to_string());
        assert_eq!(t.common_name("de", "cardinalis_cardinalis").as_deref(), Some("Rotkardinal"));
        assert_eq!(t.common_name("xx", "cardinalis_cardinalis"), None);
        assert_eq!(t.common_name("../../etc/passwd", "x"), None);
        std::fs::write(dir.path().join("labels/en.txt"), "Cardinalis cardinalis_Northern Cardinal\n").expect("write");
        let cardinal =
            Some(Species { code: "cardinalis_cardinalis".into(), scientific: "Cardinalis cardinalis".into() });
        for name in
            ["cardinalis_cardinalis", "Cardinalis cardinalis", "northern CARDINAL", "Rotkardinal", " rotkardinal "]
        {
            assert_eq!(t.resolve(name), cardinal, "{name}");
        }
        assert_eq!(t.resolve("Turdus migratorius"), None);
        assert_eq!(t.installed(), vec!["de".to_owned(), "en".to_owned()]);
    }
}
