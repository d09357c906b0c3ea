// Register a satellite: POST /api/satellites, then show the one-time credentials and a QR code
// of the registration that the hub draws (POST /satellites/qr). Nothing here keeps the secrets.
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
    const submit = $("register-submit");
    submit.disabled = true;
    const res = await window.bh.api("POST", "/satellites", body);
    submit.disabled = false;
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
