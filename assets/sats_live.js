// Satellites list and satellite page, live: they follow the team WebSocket (as live.js does) and
// redraw a satellite's card or summary when it goes offline, comes back or sends a heartbeat.
// The hub renders the fragment (one template): GET /satellites/{id}/card or /satellites/{id}/summary.
"use strict";
(function () {
  const list = document.querySelector(".sat-cards");
  if (!list && !document.getElementById("sat")) return;
  const pending = new Map();
  let backoff = 1000;

  function target(id) {
    // Looked up each time: a redraw replaces the element.
    const detail = document.getElementById("sat");
    if (detail) return detail.dataset.id === id ? { el: detail, url: "/satellites/" + encodeURIComponent(id) + "/summary" } : null;
    const card = list.querySelector(`article.sat-card[data-id="${CSS.escape(id)}"]`);
    return card ? { el: card, url: "/satellites/" + encodeURIComponent(id) + "/card" } : null;
  }

  function recount() {
    const note = document.getElementById("sat-count");
    if (!note || !list) return;
    const cards = list.querySelectorAll("article.sat-card");
    const online = list.querySelectorAll("article.sat-card .sat-state.online").length;
    const n = note.querySelector(".online-n");
    if (n) n.textContent = String(online);
    note.dataset.shown = String(cards.length);
  }

  function redraw(id) {
    const t = target(id);
    if (!t) return;
    fetch(t.url, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => {
        const now = target(id);
        if (!now) return;
        const tpl = document.createElement("template");
        tpl.innerHTML = html.trim();
        const fresh = tpl.content.firstElementChild;
        if (!fresh) return;
        now.el.replaceWith(fresh);
        window.bh.refreshTimes(fresh);
        recount();
        document.dispatchEvent(new CustomEvent("bh:satellite-redrawn", { detail: { id } }));
      })
      .catch(() => {});
  }

  // One redraw per satellite for a burst of frames (a heartbeat and telemetry come together).
  function soon(id) {
    if (!id || pending.has(id)) return;
    pending.set(id, setTimeout(() => { pending.delete(id); redraw(id); }, 300));
  }

  function connect() {
    const team = window.bh.meta("bh-team");
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${proto}//${location.host}/api/ws/events?tenantId=${encodeURIComponent(team)}`);
    socket.addEventListener("open", () => { backoff = 1000; document.documentElement.dataset.satsLive = "on"; });
    socket.addEventListener("message", (ev) => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch (_) { return; }
      if (!msg || !msg.data) return;
      if (msg.type === "satellite" && msg.data.satellite) soon(msg.data.satellite.satelliteId);
      else if (msg.type === "heartbeat") soon(msg.data.satelliteId);
    });
    socket.addEventListener("close", () => {
      document.documentElement.dataset.satsLive = "off";
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 30000);
    });
  }
  connect();
  window.bhSatsRedraw = soon;
})();
