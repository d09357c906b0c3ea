//! Uploading a release (SPEC 2.14, 4.11). The APK streams to a temp file in the object store through
//! an [`ApkUpload`], hashed (SHA-256) and counted on the way, so memory stays flat for a 200 MB
//! file. The form's other fields may come before or after the file, so everything is checked once
//! the body has ended ([`publish`]): the version, the flag, the notes, and that the file is an APK
//! (a ZIP whose central directory names `AndroidManifest.xml`, read within fixed bounds by
//! [`apk_zip`]). The row is inserted and the file
//! renamed into place in one transaction; every refusal, and a client that goes away mid-upload,
//! drops the temp file, so nothing partial is ever left.

use std::{cmp::Ordering, fs::File, path::Path};

use sha2::{Digest, Sha256};

use super::{ReleaseError, apk_zip, in_tx};
use crate::{
    clock::Clock,
    domain::versions,
    ids::UserId,
    objects::{ObjectStore, Staged, StagingWriter},
    store::{
        self, Store,
        mobile_releases::{NewRelease, Release},
    },
};

/// Longest release notes, in characters.
pub const MAX_NOTES_CHARS: usize = 10_000;

/// An APK arriving in pieces.
#[derive(Debug)]
pub struct ApkUpload {
    writer: StagingWriter,
    hasher: Sha256,
    max_bytes: u64,
}

/// A whole APK on disk, fsynced, not yet visible under any key.
#[derive(Debug)]
pub struct ReceivedApk {
    staged: Staged,
    sha256: String,
}

/// The form's text fields as sent.
#[derive(Debug, Default, Clone)]
pub struct ReleaseForm {
    pub version: Option<String>,
    pub notes: Option<String>,
    /// `true`/`false` (also `1`/`0`, `on`/`off`, `yes`/`no`); left out or empty means false.
    pub force_update: Option<String>,
}

impl ApkUpload {
    /// Starts a temp file for an APK of at most `max_bytes`.
    pub async fn begin(objects: &ObjectStore, max_bytes: u64) -> Result<Self, ReleaseError> {
        Ok(Self { writer: objects.stage_stream().await?, hasher: Sha256::new(), max_bytes })
    }

    /// Appends a piece; past the limit the upload is refused (and the temp file goes when dropped).
    pub async fn write(&mut self, piece: &[u8]) -> Result<(), ReleaseError> {
        if self.writer.len() + piece.len() as u64 > self.max_bytes {
            return Err(ReleaseError::TooLarge { limit: self.max_bytes });
        }
        self.hasher.update(piece);
        Ok(self.writer.write(piece).await?)
    }

    /// The file has ended: fsync it and seal the digest.
    pub async fn finish(self) -> Result<ReceivedApk, ReleaseError> {
        let sha256 = hex::encode(self.hasher.finalize());
        Ok(ReceivedApk { staged: self.writer.finish().await?, sha256 })
    }
}

/// Checks the form and the file, then stores the release: the row and the APK under
/// `apks/<id>.apk` appear together or not at all.
pub async fn publish(
    store: &Store,
    objects: &ObjectStore,
    clock: &Clock,
    by: Option<UserId>,
    apk: Option<ReceivedApk>,
    form: ReleaseForm,
) -> Result<Release, ReleaseError> {
    let apk = apk.ok_or(ReleaseError::MissingApk)?;
    let version_text = form.version.as_deref().map(str::trim).filter(|v| !v.is_empty());
    let version =
        versions::parse(version_text.ok_or(ReleaseError::MissingVersion)?).map_err(ReleaseError::InvalidVersion)?;
    let force_update = parse_flag(form.force_update.as_deref())?;
    let notes = form.notes.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
    if notes.as_ref().is_some_and(|n| n.chars().count() > MAX_NOTES_CHARS) {
        return Err(ReleaseError::NotesTooLong { max: MAX_NOTES_CHARS });
    }
    let apk = tokio::task::spawn_blocking(move || check_apk(apk))
        .await
        .map_err(|e| ReleaseError::Objects(crate::objects::ObjectError::Task(e.to_string())))??;

    let (now, id) = (clock.stamp(), uuid::Uuid::new_v4().to_string());
    let key = format!("apks/{id}.apk");
    let row_key = key.clone();
    let stored = in_tx(store, move |tx| {
        let taken = store::mobile_releases::versions(tx)?
            .into_iter()
            .any(|(_, v)| versions::parse(&v).is_ok_and(|v| versions::precedence(&v, &version) == Ordering::Equal));
        if taken {
            return Err(ReleaseError::VersionTaken(version.to_string()));
        }
        let release = store::mobile_releases::insert(
            tx,
            &NewRelease {
                id: &id,
                version: &version.to_string(),
                notes: notes.as_deref(),
                force_update,
                storage_key: &row_key,
                file_size: apk.staged.len() as i64,
                sha256: &apk.sha256,
                uploaded_by: by,
            },
            now,
        )
        .map_err(|e| match e {
            store::Error::Duplicate => ReleaseError::VersionTaken(version.to_string()),
            other => other.into(),
        })?;
        // Renamed last: if the commit then fails, the file is removed again below.
        apk.staged.commit(&row_key)?;
        Ok(release)
    })
    .await;
    if stored.is_err() {
        // The key is this upload's own, so whatever is there is ours to remove.
        if let Err(e) = objects.delete(&key).await {
            tracing::error!(error = %e, key, "could not remove the APK of a failed upload");
        }
    }
    stored
}

/// `forceUpdate` as a form sends it.
fn parse_flag(text: Option<&str>) -> Result<bool, ReleaseError> {
    match text.map(|t| t.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") | Some("false") | Some("0") | Some("off") | Some("no") => Ok(false),
        Some("true") | Some("1") | Some("on") | Some("yes") => Ok(true),
        Some(_) => Err(ReleaseError::InvalidForceUpdate(text.unwrap_or_default().to_owned())),
    }
}

/// An APK is a ZIP with `AndroidManifest.xml` at its root; only the central directory is read.
fn check_apk(apk: ReceivedApk) -> Result<ReceivedApk, ReleaseError> {
    let path = apk.staged.path().ok_or_else(|| ReleaseError::NotAnApk("the upload is gone".into()))?;
    has_manifest(path)?;
    Ok(apk)
}

fn has_manifest(path: &Path) -> Result<(), ReleaseError> {
    let mut file = File::open(path).map_err(|e| ReleaseError::Objects(e.into()))?;
    match apk_zip::names_manifest(&mut file) {
        Ok(true) => Ok(()),
        Ok(false) => Err(ReleaseError::NotAnApk("the ZIP has no AndroidManifest.xml".into())),
        Err(why) => Err(ReleaseError::NotAnApk(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn force_update_reads_like_a_form_checkbox() {
        for (text, want) in
            [(None, false), (Some(""), false), (Some("true"), true), (Some("ON"), true), (Some("0"), false)]
        {
            assert_eq!(parse_flag(text).expect("flag"), want, "{text:?}");
        }
        assert!(matches!(parse_flag(Some("maybe")), Err(ReleaseError::InvalidForceUpdate(_))));
    }
}
