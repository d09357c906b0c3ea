// Register a satellite: POST /api/satellites, then show the one-time credentials, the command
// that writes them to the Pi's satellite.toml, and a QR code of the registration that the hub
// draws (POST /satellites/qr). Nothing here keeps the secrets.
"use strict";
(function () {
  const form = document.getElementById("register-form");
  if (!form) return;
  const $ = (id) => document.getElementById(id);
  const err = $("register-error");

  function fail(msg) {
    err.textContent = msg;
    err.hidden = false;
  }

  // A TOML basic string: JSON's escapes (\" \\ \n \uXXXX) are TOML's too.
  const q = (v) => JSON.stringify(String(v));

  // The shell lines that write /etc/birdhub/satellite.toml (mode 0600) and start the satellite.
  // The file holds what `birdhub satellite run` needs; everything else takes its default.
  function setupScript(d, position) {
    let host = "", port = 1883, scheme = "mqtt:";
    try {
      const u = new URL(d.mqtt.brokerUrl);
      host = u.hostname.replace(/^\[|\]$/g, "");
      port = Number(u.port) || 1883;
      scheme = u.protocol;
    } catch (_) { /* written as the hub's host below */ }
    if (!host) host = location.hostname;
    const lines = [
      "# birdhub satellite " + q(d.name) + ": the credentials are shown once; keep this file secret.",
      "hub_url = " + q(location.origin),
      "mqtt_host = " + q(host),
      "mqtt_port = " + port,
      "satellite_id = " + q(d.id),
      "tenant_id = " + q(d.tenantId),
      "name = " + q(d.name),
      "mqtt_password = " + q(d.mqtt.password),
      "api_key = " + q(d.apiKey),
      "topic_root = " + q(String(d.mqtt.topicPrefix || "birdhub").split("/")[0]),
      "# The microphone: alsa:default, alsa:plughw:1,0, rtsp:URL or dir:/path/to/recordings",
      "source = \"alsa:default\"",
    ];
    if (position) lines.push("latitude = " + position[0], "longitude = " + position[1]);
    if (scheme !== "mqtt:" && scheme !== "tcp:") {
      lines.unshift("# This hub hands out " + d.mqtt.brokerUrl + "; the Pi satellite speaks plain MQTT on the LAN.");
    }
    return [
      "sudo install -d -m 755 /etc/birdhub",
      "sudo sh -c 'umask 077; cat > /etc/birdhub/satellite.toml' <<'EOF'",
      ...lines,
      "EOF",
      "sudo systemctl enable birdhub-satellite",
      "sudo systemctl restart birdhub-satellite",
    ].join("\n");
  }

  async function drawQr(text) {
    const box = $("reg-qr");
    try {
      const resp = await fetch("/satellites/qr", {
        method: "POST",
        credentials: "same-origin",
        headers: { "X-CSRF-Token": window.bh.meta("csrf-token"), "Content-Type": "text/plain" },
        body: text,
      });
      if (!resp.ok) throw new Error("status " + resp.status);
      box.innerHTML = await resp.text();
    } catch (e) {
      box.textContent = "The QR code could not be drawn (" + e.message + "). Copy the values above instead.";
    }
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    err.hidden = true;
    const name = $("sat-name").value.trim();
    if (!name) { fail("Give the satellite a name."); $("sat-name").focus(); return; }
    const body = { name, kind: $("sat-kind").value };
    const lat = $("sat-lat").value.trim();
    const lon = $("sat-lon").value.trim();
    if ((lat === "") !== (lon === "")) { fail("Give both latitude and longitude, or neither."); return; }
    if (lat !== "") { body.latitude = Number(lat); body.longitude = Number(lon); }
    const position = lat !== "" ? [Number(lat), Number(lon)] : null;
    // Called at once from the submit handler: app.js guards the form against a double submit.
    const res = await window.bh.api("POST", "/satellites", body);
    if (!res.ok) {
      fail((res.data && res.data.message) || "The hub refused (" + res.status + ").");
      return;
    }
    const d = res.data;
    $("reg-name").textContent = d.name;
    $("reg-password").textContent = d.mqtt.password;
    $("reg-apikey").textContent = d.apiKey;
    $("reg-username").textContent = d.mqtt.username;
    $("reg-broker").textContent = d.mqtt.brokerUrl;
    $("reg-client").textContent = d.mqtt.clientId;
    $("reg-topic").textContent = d.mqtt.topicPrefix;
    $("reg-open").href = "/satellites/" + encodeURIComponent(d.id);
    $("reg-setup").textContent = setupScript(d, position);
    $("reg-pi").hidden = body.kind === "mobile";
    $("register-card").hidden = true;
    $("register-result").hidden = false;
    $("register-result").scrollIntoView({ block: "start" });
    const registration = {
      hubUrl: location.origin,
      satelliteId: d.id,
      tenantId: d.tenantId,
      name: d.name,
      mqtt: d.mqtt,
      apiKey: d.apiKey,
    };
    await drawQr(JSON.stringify(registration));
  });
})();
