// Live page: new detections over the team WebSocket, rendered by the hub as cards (one template).
"use strict";
(function () {
  const feed = document.getElementById("feed");
  const dot = document.getElementById("live-state");
  if (!feed) return;
  let socket = null;
  let backoff = 1000;
  let countsTimer = null;

  function setState(on, why) {
    if (!dot) return;
    dot.classList.toggle("on", on);
    dot.title = why;
    dot.setAttribute("aria-label", why);
  }

  function arrived(det) {
    if (document.getElementById("det-" + det.id)) return;
    const empty = document.getElementById("feed-empty");
    if (empty) empty.remove();
    fetch("/live/card/" + encodeURIComponent(det.id), { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => {
        if (document.getElementById("det-" + det.id)) return;
        const tpl = document.createElement("template");
        tpl.innerHTML = html.trim();
        const card = tpl.content.firstElementChild;
        if (!card) return;
        card.classList.add("new");
        feed.prepend(card);
        window.bh.refreshTimes(card);
        while (feed.children.length > 50) feed.lastElementChild.remove();
      })
      .catch(() => {});
    // Today's numbers, at most once every 2 s.
    clearTimeout(countsTimer);
    countsTimer = setTimeout(() => {
      ["today", "grid", "sats"].forEach((id) => {
        const el = document.getElementById(id);
        if (el && window.htmx) window.htmx.trigger(el, "refresh");
      });
    }, 2000);
  }

  function connect() {
    const team = window.bh.meta("bh-team");
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    socket = new WebSocket(`${proto}//${location.host}/api/ws/events?tenantId=${encodeURIComponent(team)}`);
    socket.addEventListener("open", () => { backoff = 1000; setState(true, "live: connected"); });
    socket.addEventListener("message", (ev) => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch (_) { return; }
      if (msg.type === "detection" && msg.data) arrived(msg.data);
    });
    socket.addEventListener("close", () => {
      setState(false, "live: reconnecting");
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 30000);
    });
  }
  connect();
})();
