//! Class labels: index -> (scientific name, common name, species code), in every shipped language.
//!
//! Label files have one `Scientific name_Common name` line per model output, in output order.
//! The **species code** is the scientific name in lower case with every run of other characters
//! turned into one `_` (`Turdus migratorius` -> `turdus_migratorius`, `Human vocal` ->
//! `human_vocal`). It is unique across the label set, the same in every language, readable in URLs,
//! and stable across model versions that keep the scientific name.

use std::{collections::HashSet, path::Path};

/// One model output class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub scientific: String,
    pub common: String,
    pub code: String,
}

/// All classes of one label file, in model output order.
#[derive(Debug, Clone)]
pub struct Labels {
    labels: Vec<Label>,
}

/// Why a label file was refused.
#[derive(Debug, thiserror::Error)]
pub enum LabelError {
    #[error("reading {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{file} line {line}: expected `Scientific name_Common name`, got {text:?}")]
    Line { file: String, line: usize, text: String },
    #[error("{file}: species code {code:?} appears twice")]
    DuplicateCode { file: String, code: String },
    #[error("{file}: {found} labels, the model has {expected}")]
    Count { file: String, found: usize, expected: usize },
    #[error("{file} line {line}: scientific name {found:?} differs from the English file's {expected:?}")]
    Mismatch { file: String, line: usize, found: String, expected: String },
}

/// The species code of a scientific name (see the module docs).
pub fn species_code(scientific: &str) -> String {
    let mut code = String::with_capacity(scientific.len());
    for c in scientific.trim().chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            code.push(c);
        } else if !code.ends_with('_') && !code.is_empty() {
            code.push('_');
        }
    }
    while code.ends_with('_') {
        code.pop();
    }
    code
}

impl Labels {
    /// Parses label text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, LabelError> {
        let mut labels = Vec::new();
        let mut seen = HashSet::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            let bad = || LabelError::Line { file: file.into(), line: i + 1, text: line.into() };
            let (scientific, common) = line.split_once('_').ok_or_else(bad)?;
            let (scientific, common) = (scientific.trim(), common.trim());
            if scientific.is_empty() || common.is_empty() {
                return Err(bad());
            }
            let code = species_code(scientific);
            if code.is_empty() {
                return Err(bad());
            }
            if !seen.insert(code.clone()) {
                return Err(LabelError::DuplicateCode { file: file.into(), code });
            }
            labels.push(Label { scientific: scientific.into(), common: common.into(), code });
        }
        Ok(Self { labels })
    }

    pub fn load(path: &Path) -> Result<Self, LabelError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| LabelError::Io { path: path.display().to_string(), source })?;
        Self::parse(&text, &path.display().to_string())
    }

    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    pub fn get(&self, index: usize) -> Option<&Label> {
        self.labels.get(index)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Label> {
        self.labels.iter()
    }

    /// The index of a species code.
    pub fn index_of(&self, code: &str) -> Option<usize> {
        self.labels.iter().position(|l| l.code == code)
    }

    /// Checks that a translation lines up with this (English) set, class by class.
    pub fn check_translation(&self, other: &Labels, file: &str) -> Result<(), LabelError> {
        if other.len() != self.len() {
            return Err(LabelError::Count { file: file.into(), found: other.len(), expected: self.len() });
        }
        for (i, (a, b)) in self.labels.iter().zip(&other.labels).enumerate() {
            if a.scientific != b.scientific {
                return Err(LabelError::Mismatch {
                    file: file.into(),
                    line: i + 1,
                    found: b.scientific.clone(),
                    expected: a.scientific.clone(),
                });
            }
        }
        Ok(())
    }
}

/// The languages shipped in `<model_dir>/labels/` (file stems, e.g. `de`, `pt_BR`), sorted.
pub fn languages(model_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(model_dir.join("labels")) else { return Vec::new() };
    let mut langs: Vec<String> =
        entries.filter_map(|e| e.ok()?.path().file_name()?.to_str()?.strip_suffix(".txt").map(str::to_owned)).collect();
    langs.sort();
    langs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn species_codes_are_slugs_of_the_scientific_name() {
        assert_eq!(species_code("Turdus migratorius"), "turdus_migratorius");
        assert_eq!(species_code("Human vocal"), "human_vocal");
        assert_eq!(species_code("  Setophaga  coronata (Audubon's) "), "setophaga_coronata_audubon_s");
    }

    #[test]
    fn parses_lines_and_rejects_bad_ones() {
        let labels = Labels::parse("Turdus migratorius_American Robin\r\n\nDog_Dog\n", "t").expect("parse");
        assert_eq!(labels.len(), 2);
        assert_eq!(labels.get(0).map(|l| l.common.as_str()), Some("American Robin"));
        assert_eq!(labels.index_of("dog"), Some(1));
        assert!(matches!(Labels::parse("no separator here\n", "t"), Err(LabelError::Line { line: 1, .. })));
        assert!(matches!(Labels::parse("Dog_Dog\nDog_Hund\n", "t"), Err(LabelError::DuplicateCode { .. })));
        assert!(matches!(Labels::parse("_Nameless\n", "t"), Err(LabelError::Line { .. })));
    }
}
