//! The systemd unit and the Debian metadata say what the README promises.

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
    let manifest: toml::Table = read("Cargo.toml").parse().expect("Cargo.toml");
    let deb = &manifest["package"]["metadata"]["deb"];
    assert_eq!(deb["conf-files"][0].as_str(), Some("/etc/birdhub/birdhub.toml"));
    assert_eq!(deb["systemd-units"]["unit-name"].as_str(), Some("birdhub"));
    let assets = deb["assets"].as_array().expect("assets");
    assert!(assets.iter().any(|a| a[0].as_str() == Some("debian/birdhub.toml")));
    let postinst = read("debian/postinst");
    assert!(postinst.contains("adduser --system"), "postinst creates the service user");
    assert!(postinst.contains("#DEBHELPER#"), "systemd snippets are inserted");
    assert_eq!(read("debian/birdhub.toml"), birdhub::config::EXAMPLE_CONFIG);
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
    let manifest: toml::Table = read("Cargo.toml").parse().expect("Cargo.toml");
    let assets = manifest["package"]["metadata"]["deb"]["assets"].as_array().expect("assets");
    for unit in ["systemd/birdhub-satellite.service", "systemd/birdhub-satellite@.service"] {
        assert!(assets.iter().any(|a| a[0].as_str() == Some(unit)), "the package ships {unit}");
    }
}
