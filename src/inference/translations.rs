//! Common names in other languages, from the model's `labels/<lang>.txt` files, loaded on first
//! use and kept. Rare-species alerts name the bird in the team's primary and secondary languages.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
};

use super::{ModelDir, labels::Labels};

type Names = Arc<HashMap<String, String>>;

/// Species code -> common name, per language. Cheap to clone.
#[derive(Clone, Default)]
pub struct Translations {
    /// The model directory setting (empty: the usual places), resolved on first use.
    model_dir: String,
    /// Loaded languages; `None` for one without a label file, so it is not retried per call.
    loaded: Arc<Mutex<HashMap<String, Option<Names>>>>,
}

impl std::fmt::Debug for Translations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Translations").field("model_dir", &self.model_dir).finish_non_exhaustive()
    }
}

impl Translations {
    pub fn new(model_dir: &str) -> Self {
        Self { model_dir: model_dir.to_owned(), loaded: Arc::default() }
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
    }
}
