// One satellite: update (confirmed), logs, live audio over the team WebSocket, rename, key
// rotation, delete and the config form, all through /api. The API decides who may; its message
// is shown. The summary at the top is redrawn live by sats_live.js.
"use strict";
(function () {
  const root = document.getElementById("sat");
  if (!root) return;
  const id = root.dataset.id;
  const base = "/satellites/" + encodeURIComponent(id);
  const $ = (x) => document.getElementById(x);
  const msg = (res) => (res.data && res.data.message) || "The hub refused (" + res.status + ").";
  const on = (el, ev, fn) => { if (el) el.addEventListener(ev, fn); };

  // Update: the summary offers only a newer release than the installed one (the button names
  // it); the person confirms, and the summary is redrawn with the new state.
  document.addEventListener("click", (ev) => {
    const btn = ev.target.closest("#act-update");
    if (!btn) return;
    const to = btn.dataset.target;
    const question = "Update " + btn.dataset.name + " from " + btn.dataset.from + " to " + to +
      "? The satellite installs it and restarts; recording pauses for a minute or two.";
    if (!window.confirm(question)) return;
    btn.disabled = true;
    window.bh.api("POST", base + "/update", { targetVersion: to }).then((res) => {
      btn.disabled = false;
      if (res.ok) {
        window.bh.toast("Update to " + res.data.targetVersion + " requested.", "ok");
        if (window.bhSatsRedraw) window.bhSatsRedraw(id);
      } else {
        window.bh.toast(msg(res), "bad");
      }
    });
  });

  // Schedule times are the satellite's local clock times: written in the viewer's 12/24-hour
  // format without moving them to the viewer's zone.
  function clocks() {
    document.querySelectorAll("time.clock").forEach((t) => {
      const m = /T(\d{2}):(\d{2})/.exec(t.getAttribute("datetime") || "");
      if (!m) return;
      const d = new Date(Date.UTC(2000, 0, 1, Number(m[1]), Number(m[2])));
      t.textContent = d.toLocaleTimeString(undefined, { hour: "numeric", minute: "2-digit", hour12: window.bh.hour12(), timeZone: "UTC" });
    });
  }
  clocks();

  // Logs: ask, then poll the answer every 2 s for up to a minute.
  on($("act-logs"), "click", async (ev) => {
    const btn = ev.target;
    const box = $("logs-box"), pre = $("logs"), state = $("logs-state");
    box.hidden = false;
    pre.textContent = "";
    state.textContent = " · asking the satellite…";
    btn.disabled = true;
    let res = await window.bh.api("POST", base + "/logs/request?wait=5", { tail: 500 });
    for (let i = 0; i < 30 && res.ok && res.status === 202; i++) {
      await new Promise((r) => setTimeout(r, 2000));
      res = await window.bh.api("GET", base + "/logs/" + encodeURIComponent(res.data.requestId));
    }
    btn.disabled = false;
    if (res.ok && res.status === 200) {
      const lines = res.data.lines || [];
      pre.textContent = lines.join("\n") || "(no lines)";
      state.textContent = " · " + window.bh.count(lines.length, "line", "lines") + (res.data.truncated ? " (truncated)" : "");
    } else if (res.ok) {
      state.textContent = " · the satellite did not answer. Is it online?";
    } else {
      state.textContent = " · " + msg(res);
    }
  });

  // Live audio: live-start, a keepalive every 20 s, live-stop; chunks play one after another.
  const liveBtn = $("act-live");
  const note = $("live-note");
  let socket = null, keepalive = null, ctx = null, nextAt = 0;
  function setLive(onAir, text) {
    liveBtn.setAttribute("aria-pressed", onAir ? "true" : "false");
    liveBtn.classList.toggle("playing", onAir);
    liveBtn.querySelector("span").textContent = onAir ? "Stop listening" : "Listen live";
    note.hidden = !text;
    note.textContent = text || "";
  }
  function stopLive(text) {
    clearInterval(keepalive);
    keepalive = null;
    if (socket) {
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "live-stop", satelliteId: id }));
      const s = socket;
      socket = null;
      setTimeout(() => s.close(), 200);
    }
    setLive(false, text);
  }
  async function play(b64) {
    const bin = atob(b64);
    const buf = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) buf[i] = bin.charCodeAt(i);
    try {
      const audio = await ctx.decodeAudioData(buf.buffer);
      const src = ctx.createBufferSource();
      src.buffer = audio;
      src.connect(ctx.destination);
      nextAt = Math.max(nextAt, ctx.currentTime + 0.05);
      src.start(nextAt);
      nextAt += audio.duration;
    } catch (_) { /* a chunk that does not decode is skipped */ }
  }
  on(liveBtn, "click", () => {
    if (socket) { stopLive(""); return; }
    const AC = window.AudioContext || window.webkitAudioContext;
    if (!ctx && AC) ctx = new AC();
    if (ctx && ctx.state === "suspended") ctx.resume();
    const team = window.bh.meta("bh-team");
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    socket = new WebSocket(`${proto}//${location.host}/api/ws/events?tenantId=${encodeURIComponent(team)}`);
    setLive(true, "Connecting…");
    socket.addEventListener("open", () => {
      socket.send(JSON.stringify({ type: "live-start", satelliteId: id }));
      keepalive = setInterval(() => {
        if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "live-keepalive", satelliteId: id }));
      }, 20000);
    });
    socket.addEventListener("message", (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch (_) { return; }
      if (m.type === "live-started") setLive(true, "Listening. The satellite sends a chunk every few seconds.");
      else if (m.type === "live-audio" && m.data && m.data.satelliteId === id && ctx) play(m.data.audio);
      else if (m.type === "live-ended") stopLive("Live audio ended (" + (m.data && m.data.reason) + ").");
      else if (m.type === "error" && m.data) stopLive(m.data.message);
    });
    socket.addEventListener("close", () => { if (socket) stopLive("The connection closed."); });
  });
  window.addEventListener("pagehide", () => { if (socket) stopLive(""); });

  // Dialogs: rename and delete.
  document.querySelectorAll("dialog [data-close]").forEach((b) => b.addEventListener("click", () => b.closest("dialog").close()));
  on($("act-rename"), "click", () => $("rename-dialog").showModal());
  on($("rename-form"), "submit", async (ev) => {
    ev.preventDefault();
    const res = await window.bh.api("PATCH", base, { name: $("rename-name").value.trim() });
    if (!res.ok) { $("rename-error").textContent = msg(res); $("rename-error").hidden = false; return; }
    location.reload();
  });
  on($("act-delete"), "click", () => $("delete-dialog").showModal());
  on($("delete-form"), "submit", async (ev) => {
    ev.preventDefault();
    const res = await window.bh.api("DELETE", base);
    if (!res.ok) { $("delete-error").textContent = msg(res); $("delete-error").hidden = false; return; }
    location.assign("/satellites");
  });

  on($("act-rotate"), "click", async (ev) => {
    if (!window.confirm("Make a new API key? The satellite stops working until it has the new key.")) return;
    ev.target.disabled = true;
    const res = await window.bh.api("POST", base + "/rotate-api-key");
    ev.target.disabled = false;
    if (!res.ok) { window.bh.toast(msg(res), "bad"); return; }
    $("new-key").textContent = res.data.apiKey;
    $("key-result").hidden = false;
  });

  // Config: empty inherits (null), otherwise the typed value.
  on($("config-form"), "submit", async (ev) => {
    ev.preventDefault();
    const overrides = {};
    ev.target.querySelectorAll("[data-kind]").forEach((el) => {
      const v = el.value.trim();
      if (v === "") overrides[el.name] = null;
      else if (el.dataset.kind === "bool") overrides[el.name] = v === "true";
      else overrides[el.name] = Number(v);
    });
    const body = { overrides };
    const lock = $("config-locked");
    if (lock) body.configLocked = lock.checked;
    const res = await window.bh.api("PUT", base + "/config", body);
    const box = $("config-error");
    if (!res.ok) { box.textContent = msg(res); box.hidden = false; return; }
    box.hidden = true;
    window.bh.toast("Saved and sent to the satellite.", "ok");
  });
})();
