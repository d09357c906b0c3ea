//! The Satellites page's "Remote workers" card in a real browser (issue 49): a platform admin
//! makes a worker key (shown once, with the command to run), a real `birdhub worker` joins with
//! it and the card shows it connected with what it runs, and revoking it stops the worker. A team
//! admin sees no card. Screenshots at phone and desktop widths.

mod common;

use birdhub::config::WorkerCount;
use common::{PASSWORD, browser::Browser, workers};
use serde_json::Value;

#[tokio::test]
async fn a_platform_admin_adds_a_worker_machine_sees_it_work_and_revokes_it() {
    let hub = common::spawn_hub_with(|s| {
        common::with_model(s);
        s.inference.workers = WorkerCount::Threads(0);
    })
    .await;
    let root = hub.user("root@example.org", true).await;
    let owner = hub.user("owner@example.org", false).await;

    let b = Browser::start(hub.http_addr.port(), "workers").await;
    b.sign_in(&owner.email, PASSWORD, None).await;
    b.goto("/satellites").await;
    assert!(!b.has("#remote-workers").await, "a team admin does not see the hub's machines");
    b.close().await;

    let b = Browser::start(hub.http_addr.port(), "workers").await;
    b.sign_in(&root.email, PASSWORD, None).await;
    b.goto("/satellites").await;
    assert!(b.text("#remote-workers").await.contains("No remote workers yet"));
    b.fill("#remote-workers input[name=name]", "study desktop").await;
    b.click("#remote-workers button[type=submit]").await;
    assert!(b.wait_until("return document.querySelector('#new-worker-key').value.startsWith('bhw.');", 10).await);
    let key = b.js("return document.querySelector('#new-worker-key').value;").await;
    let key = workers::Key {
        id: key.as_str().and_then(|k| k.split('.').nth(1)).expect("id").to_owned(),
        key: key.as_str().expect("key").to_owned(),
    };
    let command = b.text("#new-worker").await;
    assert!(command.contains("birdhub worker --hub") && command.contains("--key-file"), "{command}");
    b.shot("new-key").await;

    let logs = tempfile::tempdir().expect("tmp");
    let mut worker = workers::spawn(hub.mqtt_port, &key, &workers::model_dir(), &logs.path().join("w.log"));
    for _ in 0..600 {
        if hub.state().remote.is_joined(key.id.parse().expect("id")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    b.goto("/satellites").await;
    let card = b.text("#remote-workers").await;
    for want in
        ["study desktop", "connected", "test-machine", "birdnet-v2.4 fp32, 1 thread, batch 8", "1 of 1 connected"]
    {
        assert!(card.contains(want), "{want:?} missing from the card: {card}");
    }
    assert!(!card.contains(&key.key), "the key is never shown again");
    let no_iso = b.js(r"return document.body.innerText.match(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);").await;
    assert_eq!(no_iso, Value::Null, "times are shown for people");
    for width in [390, 1280] {
        b.client.set_window_size(width, 900).await.expect("resize");
        let fits = b.wait_until("return document.documentElement.scrollWidth <= window.innerWidth;", 3).await;
        assert!(fits, "the page scrolls sideways at {width} px");
    }
    b.shot("connected").await;

    b.js("window.confirm = () => true; return null;").await;
    b.click("#remote-workers button.danger").await;
    assert!(
        b.wait_until("return document.querySelector('#remote-workers').innerText.includes('revoked');", 10).await || {
            b.goto("/satellites").await;
            b.text("#remote-workers").await.contains("revoked")
        }
    );
    assert_eq!(worker.exit_code(60).await, Some(2), "the revoked worker stops");
    b.assert_no_js_errors().await;
    b.close().await;
}
