//! The systemd unit and the Debian metadata say what docs/packaging.md promises.

fn read(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect(path)
}

#[test]
fn the_unit_is_hardened_restarts_and_uses_its_state_directory() {
    let unit = read("systemd/birdhub.service");
    for line in [
        "User=birdhub",
        "ExecStart=/usr/bin/birdhub serve",
        "StateDirectory=birdhub",
        "Restart=on-failure",
        "KillSignal=SIGTERM",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "CapabilityBoundingSet=",
        "WantedBy=multi-user.target",
    ] {
        assert!(unit.lines().any(|l| l.trim() == line), "unit has {line}");
    }
}

#[test]
fn the_package_ships_the_config_as_a_conffile_and_creates_the_user() {
    let build = read("packaging/build-deb.sh");
    assert!(build.contains(r#"install -m 0640 "$ROOT/debian/birdhub.toml" "$TREE/etc/birdhub/birdhub.toml""#));
    assert!(build.contains(r#"echo "/etc/birdhub/birdhub.toml" > "$TREE/DEBIAN/conffiles""#));
    assert_eq!(read("debian/birdhub.toml"), birdhub::config::EXAMPLE_CONFIG);
    let postinst = read("debian/postinst");
    assert!(postinst.contains("adduser --system"), "postinst creates the service user");
    assert!(
        postinst.contains("install -d -m 0750 /var/lib/birdhub")
            && postinst.contains("chown birdhub:birdhub /var/lib/birdhub")
    );
    assert!(postinst.contains("/usr/bin/birdhub migrate"), "postinst migrates before the hub starts");
    assert!(postinst.contains("birdhub admin welcome"), "postinst says how to sign in");
    // Data goes only with consent: the debconf question defaults to keeping it.
    let templates = read("debian/templates");
    assert!(templates.contains("Template: birdhub/purge-data\nType: boolean\nDefault: false"));
    let postrm = read("debian/postrm");
    let delete = postrm.find("rm -rf /var/lib/birdhub").expect("postrm can delete the data");
    assert!(postrm[..delete].contains(r#"if [ "$delete" = yes ]; then"#), "only when asked");
}

#[test]
fn the_package_carries_the_model_the_runtime_and_the_licences() {
    let build = read("packaging/build-deb.sh");
    for needle in [
        "models/fetch.sh\" --platform \"$PLATFORM\"",
        "usr/lib/birdhub/libonnxruntime.so",
        "usr/share/birdhub/models/birdnet-v2.4",
        "debian/copyright",
        "rust-crates.txt",
    ] {
        assert!(build.contains(needle), "build-deb.sh has {needle}");
    }
    let copyright = read("debian/copyright");
    assert!(copyright.contains("License: CC-BY-NC-SA-4.0") && copyright.contains("NO COMMERCIAL USE"));
    assert_eq!(birdhub::inference::SYSTEM_RUNTIME_LIBRARY, "/usr/lib/birdhub/libonnxruntime.so");
    assert!(birdhub::inference::SYSTEM_MODEL_DIR.starts_with("/usr/share/birdhub/models/"));
}

#[test]
fn the_satellite_units_run_the_satellite_and_ship_in_the_package() {
    for (file, exec, state) in [
        (
            "systemd/birdhub-satellite.service",
            "ExecStart=/usr/bin/birdhub satellite run",
            "StateDirectory=birdhub-satellite",
        ),
        (
            "systemd/birdhub-satellite@.service",
            "ExecStart=/usr/bin/birdhub satellite run --instance %i",
            "StateDirectory=birdhub-satellite/%i",
        ),
    ] {
        let unit = read(file);
        for line in [
            exec,
            state,
            "SupplementaryGroups=audio",
            "Restart=always",
            "KillSignal=SIGTERM",
            "WantedBy=multi-user.target",
        ] {
            assert!(unit.lines().any(|l| l.trim() == line), "{file} has {line}");
        }
    }
    let build = read("packaging/build-deb.sh");
    assert!(build.contains("for unit in birdhub.service birdhub-satellite.service birdhub-satellite@.service"));
}
