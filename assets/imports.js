// "Import a station": sends the form to POST /api/imports as multipart (the upload's own
// progress shown), then polls GET /api/imports/{id} about once a second for the job's progress,
// and shows the result in words (the page's fragment /imports/{id}/result) when it ends.
"use strict";
(function () {
  const $ = (x) => document.getElementById(x);
  const form = $("import-form");
  if (!form) return;
  const box = $("import-error"), bar = $("import-bar"), status = $("import-status");
  const figures = $("import-figures"), result = $("import-result"), submit = $("import-submit");
  const num = (n) => Math.round(n || 0).toLocaleString("en-US");

  const peers = { "birdnet-pi": "BirdNET-Pi", "birdnet-go": "BirdNET-Go" };

  // Only the field of the chosen target shows: a new satellite's name, or the team's satellite.
  function target() {
    const chosen = form.querySelector("input[name=target]:checked");
    const existing = !!chosen && chosen.value === "existing";
    const name = $("import-name-field"), sat = $("import-satellite-field");
    if (name) name.hidden = existing;
    if (sat) sat.hidden = !existing;
  }
  form.querySelectorAll("input[name=target]").forEach((r) => r.addEventListener("change", target));
  target();

  // The hub's refusal in its words; the other peer's database (wrong_kind) offers the switch.
  function fail(message, code) {
    box.textContent = message;
    if (code === "wrong_kind") {
      const kind = $("import-kind");
      const other = kind.value === "birdnet-pi" ? "birdnet-go" : "birdnet-pi";
      const again = document.createElement("button");
      again.type = "button";
      again.id = "import-switch";
      again.textContent = "Import it as " + peers[other];
      again.addEventListener("click", () => { kind.value = other; form.requestSubmit(); });
      box.append(" ", again);
    }
    box.hidden = false;
    submit.disabled = false;
    $("import-progress").hidden = true;
  }

  function left(s) {
    if (s === null || s === undefined) return "";
    if (s >= 90) return "; about " + Math.round(s / 60) + " min left";
    return "; about " + Math.ceil(s) + " s left";
  }

  function show(job) {
    const pct = job.rows_total > 0 ? Math.min(100, Math.floor(job.rows_read * 100 / job.rows_total)) : 0;
    bar.value = pct;
    status.textContent = job.status === "queued" ? "Waiting to start…" : "Importing… " + pct + " %";
    figures.textContent = "Rows " + num(job.rows_read) + " of " + num(job.rows_total) + ", " +
      num(job.rows_per_second) + " a second; clips " + num(job.clips_copied) + ", " +
      num(job.clips_per_second) + " a second" + left(job.seconds_left) + ".";
  }

  async function finished(id, job) {
    bar.value = 100;
    status.textContent = job.status === "done" ? "Finished" : "Stopped";
    figures.textContent = "";
    const resp = await fetch("/imports/" + encodeURIComponent(id) + "/result", { credentials: "same-origin" });
    result.innerHTML = resp.ok ? await resp.text() : "";
    submit.disabled = false;
    if (window.bh && window.bh.refreshTimes) window.bh.refreshTimes();
  }

  async function poll(id) {
    for (;;) {
      const r = await window.bh.api("GET", "/imports/" + encodeURIComponent(id));
      if (!r.ok) { fail((r.data && r.data.message) || "The hub did not answer (" + r.status + ")."); return; }
      if (r.data.status === "done" || r.data.status === "failed") { await finished(id, r.data); return; }
      show(r.data);
      await new Promise((ok) => setTimeout(ok, 1000));
    }
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    box.hidden = true;
    result.textContent = "";
    const file = $("import-file").files[0];
    if (!file) { fail("Choose the station's backup or database first."); return; }
    const data = new FormData();
    data.append("kind", $("import-kind").value);
    const existing = form.querySelector("input[name=target]:checked");
    if (existing && existing.value === "existing") {
      data.append("satellite_id", $("import-satellite").value);
    } else if ($("import-name").value.trim()) {
      data.append("name", $("import-name").value.trim());
    }
    data.append("time_zone", $("import-zone").value.trim());
    data.append("dry_run", $("import-dry").checked ? "true" : "false");
    data.append("file", file, file.name);

    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/imports");
    xhr.setRequestHeader("X-CSRF-Token", window.bh.meta("csrf-token"));
    const team = window.bh.meta("bh-team");
    if (team) xhr.setRequestHeader("X-Tenant-Id", team);
    xhr.responseType = "json";
    $("import-progress").hidden = false;
    status.textContent = "Uploading…";
    submit.disabled = true;
    xhr.upload.addEventListener("progress", (e) => {
      if (!e.lengthComputable) return;
      bar.value = Math.floor(e.loaded * 100 / e.total);
      figures.textContent = "Sent " + num(e.loaded / 1048576) + " of " + num(e.total / 1048576) + " MB.";
    });
    xhr.addEventListener("error", () => fail("The upload did not reach the hub. Is it running?"));
    xhr.addEventListener("load", () => {
      const body = xhr.response || {};
      if (xhr.status !== 202) { fail(body.message || "The hub refused the upload (" + xhr.status + ").", body.code); return; }
      bar.value = 0;
      show(body);
      poll(body.id);
    });
    xhr.send(data);
  });
})();
