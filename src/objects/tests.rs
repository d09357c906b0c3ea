use super::*;

#[tokio::test]
async fn put_get_size_delete_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ObjectStore::open(dir.path()).expect("open");
    let n = store.put("audio/t1/c1.wav", b"RIFF....".to_vec()).await.expect("put");
    assert_eq!(n, 8);
    assert_eq!(store.get("audio/t1/c1.wav").await.expect("get"), b"RIFF....");
    assert_eq!(store.size("audio/t1/c1.wav").await.expect("size"), 8);
    store.put("audio/t1/c1.wav", b"new".to_vec()).await.expect("overwrite");
    assert_eq!(store.get("audio/t1/c1.wav").await.expect("get"), b"new");
    assert!(store.delete("audio/t1/c1.wav").await.expect("delete"));
    assert!(!store.delete("audio/t1/c1.wav").await.expect("delete again"));
    assert!(matches!(store.get("audio/t1/c1.wav").await, Err(ObjectError::NotFound(_))));
    assert!(fs::read_dir(tmp_dir(dir.path())).expect("tmp").next().is_none(), "no temp files left");
}

#[tokio::test]
async fn rejects_keys_that_escape_or_hide() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ObjectStore::open(dir.path()).expect("open");
    for key in ["../etc/passwd", "/abs", "a//b", ".tmp/x", "a/../b", "", "a b", "a/.hidden"] {
        assert!(matches!(store.put(key, vec![1]).await, Err(ObjectError::InvalidKey(_))), "{key:?} refused");
    }
}

/// The child half of the crash test: stage a new version of the object, then die before the rename.
#[test]
fn crash_child() {
    let Ok(root) = std::env::var("BIRDHUB_OBJECTS_CRASH_ROOT") else { return };
    let store = ObjectStore::open(&root).expect("open");
    let staged = store.stage(&vec![b'N'; 1 << 20]).expect("stage");
    std::mem::forget(staged);
    std::process::abort();
}

#[tokio::test]
async fn a_crash_between_write_and_rename_never_shows_a_partial_object() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ObjectStore::open(dir.path()).expect("open");
    store.put("audio/chunk.wav", vec![b'O'; 4096]).await.expect("old version");

    let status = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "objects::tests::crash_child", "--nocapture", "--test-threads=1"])
        .env("BIRDHUB_OBJECTS_CRASH_ROOT", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run child");
    assert!(!status.success(), "the child really crashed");
    assert_eq!(fs::read_dir(tmp_dir(dir.path())).expect("tmp").count(), 1, "the crash left a staged temp file");

    assert_eq!(store.get("audio/chunk.wav").await.expect("old"), vec![b'O'; 4096], "old version intact");

    // Reopening (what a restart does) sweeps the orphan; the key still shows the complete old object.
    let reopened = ObjectStore::open(dir.path()).expect("reopen");
    assert_eq!(fs::read_dir(tmp_dir(dir.path())).expect("tmp").count(), 0);
    assert_eq!(reopened.get("audio/chunk.wav").await.expect("old"), vec![b'O'; 4096]);
}

#[tokio::test]
async fn a_streamed_object_appears_only_when_committed_and_a_dropped_one_leaves_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ObjectStore::open(dir.path()).expect("open");
    let mut w = store.stage_stream().await.expect("stage");
    for piece in [b"PK".as_slice(), b"\x03\x04", b"rest"] {
        w.write(piece).await.expect("write");
    }
    assert_eq!(w.len(), 8);
    let staged = w.finish().await.expect("finish");
    assert!(matches!(store.size("apks/a.apk").await, Err(ObjectError::NotFound(_))), "not visible before commit");
    staged.commit("apks/a.apk").expect("commit");
    assert_eq!(store.get("apks/a.apk").await.expect("get"), b"PK\x03\x04rest");

    let mut half = store.stage_stream().await.expect("stage");
    half.write(b"half an upload").await.expect("write");
    assert_eq!(fs::read_dir(tmp_dir(dir.path())).expect("tmp").count(), 1);
    drop(half);
    let staged = store.stage_stream().await.expect("stage").finish().await.expect("finish");
    drop(staged);
    assert_eq!(fs::read_dir(tmp_dir(dir.path())).expect("tmp").count(), 0, "an abandoned stream leaves no temp file");
}
