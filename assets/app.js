// birdhub dashboard: the small shared behaviour of every page. Pages add their own file.
"use strict";
(function () {
  const meta = (n) => (document.querySelector(`meta[name="${n}"]`) || {}).content || "";

  // A 401 means "signed out" only when it is about the session itself; any other 401 (a wrong
  // two-factor code, a used backup code) is an answer like any other error.
  const SIGNED_OUT = ["unauthenticated", "session_expired", "invalid_credentials"];
  const signedOut = (status, path, data) =>
    status === 401 && !path.startsWith("/auth/login") && (!data || !data.code || SIGNED_OUT.includes(data.code));
  const toSignIn = () => location.assign("/signin?next=" + encodeURIComponent(location.pathname + location.search));

  // Double submits: the form whose submit event is being handled right now (set by a capture
  // listener below, cleared once every handler has run). A bh.api call made during it belongs to
  // that form: it sends the form's Idempotency-Key (one per form until a success, so the hub
  // answers a repeat with the first answer) and the form's buttons stay disabled until it is back.
  let submitting = null;
  const newKey = () => (window.crypto && crypto.randomUUID ? crypto.randomUUID()
    : Date.now().toString(36) + Math.random().toString(36).slice(2));
  function setPending(form, on) {
    form.querySelectorAll("button, input[type=submit]").forEach((b) => {
      if (on) { if (!b.disabled) { b.disabled = true; b.dataset.bhPending = "1"; } }
      else if (b.dataset.bhPending) { b.disabled = false; delete b.dataset.bhPending; }
    });
    if (on) form.setAttribute("aria-busy", "true"); else form.removeAttribute("aria-busy");
  }
  document.addEventListener("submit", (ev) => {
    const form = ev.target;
    if (form.__bhInFlight || form.__bhSent) { ev.preventDefault(); ev.stopImmediatePropagation(); return; }
    submitting = form;
    setTimeout(() => {
      if (submitting === form) submitting = null;
      // A form no script took (sign-in, sign-out, the team switcher) is on its way: a second
      // submit would send it again. Going back to the page (bfcache) makes it sendable again.
      if (!ev.defaultPrevented && form.method === "post") form.__bhSent = true;
    }, 0);
  }, true);
  window.addEventListener("pageshow", () => document.querySelectorAll("form").forEach((f) => { delete f.__bhSent; }));

  // Every button sends once. The second click of a double click (a person's habit, or a shaky
  // hand) never reaches a page's handler nor submits a form: on a quick hub the first answer is
  // back before it, so nothing else would stop it. Buttons meant to be pressed in quick
  // succession carry data-repeat. A button outside a form whose click handler calls bh.api
  // (before any await) stays off until that call is back, like a form's buttons do.
  let clicking = null;
  document.addEventListener("click", (ev) => {
    const btn = ev.target.closest && ev.target.closest("button, input[type=submit], input[type=button]");
    if (!btn || btn.hasAttribute("data-repeat")) return;
    if (ev.detail > 1 || btn.__bhInFlight) { ev.preventDefault(); ev.stopImmediatePropagation(); return; }
    clicking = btn;
    setTimeout(() => { if (clicking === btn) clicking = null; }, 0);
  }, true);

  // Calls the hub's /api with the session cookie, the team and the CSRF token. A lost session
  // goes to sign-in and back; other errors come back as {ok: false, status, data: {code, message}}.
  async function api(method, path, body) {
    const headers = { "X-CSRF-Token": meta("csrf-token") };
    const team = meta("bh-team");
    if (team) headers["X-Tenant-Id"] = team;
    const form = submitting;
    if (form) {
      form.__bhKey = form.__bhKey || newKey();
      headers["Idempotency-Key"] = form.__bhKey;
      form.__bhInFlight = (form.__bhInFlight || 0) + 1;
      setPending(form, true);
    }
    const button = form ? null : clicking;
    if (button) {
      button.__bhInFlight = (button.__bhInFlight || 0) + 1;
      if (!button.disabled) { button.disabled = true; button.dataset.bhPending = "1"; }
      button.setAttribute("aria-busy", "true");
    }
    const init = { method, headers, credentials: "same-origin" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const done = (ok) => {
      if (button && --button.__bhInFlight <= 0) {
        button.__bhInFlight = 0;
        button.removeAttribute("aria-busy");
        if (button.dataset.bhPending) { button.disabled = false; delete button.dataset.bhPending; }
      }
      if (!form) return;
      form.__bhInFlight -= 1;
      if (ok) delete form.__bhKey;
      if (form.__bhInFlight <= 0) { form.__bhInFlight = 0; setPending(form, false); }
    };
    let resp;
    try {
      resp = await fetch("/api" + path, init);
    } catch (e) {
      done(false);
      return { ok: false, status: 0, data: { code: "offline", message: "The hub did not answer. Is it running?" } };
    }
    const text = await resp.text().catch(() => "");
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { data = { message: text }; }
    done(resp.ok);
    if (signedOut(resp.status, path, data)) {
      toSignIn();
      return { ok: false, status: 401, data: {} };
    }
    return { ok: resp.ok, status: resp.status, data };
  }

  function toast(message, kind) {
    let box = document.getElementById("toasts");
    if (!box) {
      box = document.createElement("div");
      box.id = "toasts";
      box.setAttribute("role", "status");
      box.setAttribute("aria-live", "polite");
      document.body.appendChild(box);
    }
    const t = document.createElement("div");
    t.className = "toast " + (kind || "");
    t.textContent = message;
    box.appendChild(t);
    setTimeout(() => t.remove(), 5000);
  }

  // A toast that outlives a reload. A save that reloads the page to show what is now stored
  // (Team settings, detection settings) would lose its "Saved" with the old page, so the note
  // waits in sessionStorage; the reloaded page shows it once and removes it. Only that same
  // page shows it, and only soon after, so a note never lands on another page or a later visit.
  const AFTER_RELOAD = "bh-toast-after-reload";
  const here = () => location.pathname + location.search;
  function reloadSaying(message, kind) {
    if (message) {
      const note = { message, kind: kind || "ok", path: here(), at: Date.now() };
      try { sessionStorage.setItem(AFTER_RELOAD, JSON.stringify(note)); } catch (_) { /* no storage: reload without it */ }
    }
    location.reload();
  }
  function toastLeftBeforeReload() {
    let note = null;
    try {
      note = JSON.parse(sessionStorage.getItem(AFTER_RELOAD) || "null");
      sessionStorage.removeItem(AFTER_RELOAD);
    } catch (_) { note = null; }
    if (note && note.message && note.path === here() && Date.now() - note.at < 30000) toast(note.message, note.kind);
  }

  // Times: every <time> is written here, in the viewer's zone and their 12/24-hour preference
  // (the bh-time-format meta). time.at is an exact time, time.ago "3 min ago" (the exact time
  // as its tooltip), time.day a date.
  const hour12 = () => meta("bh-time-format") === "12h";
  function fmtTime(iso, opts) {
    const d = new Date(iso);
    if (isNaN(d)) return iso;
    const o = Object.assign({ hour: "numeric", minute: "2-digit", hour12: hour12() }, opts || {});
    return d.toLocaleString(undefined, o);
  }
  // A time with a station's zone (data-zone, issue 37) is written in that zone, with its short
  // name ("07:02 EST"), when its clock there reads otherwise than the viewer's; as usual when it
  // reads the same (the viewer's own zone, or an alias of it such as Etc/UTC for UTC).
  const viewerZone = (() => { try { return Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (_) { return ""; } })();
  function zoneOpts(zone) {
    if (!zone || zone === viewerZone) return {};
    try { new Intl.DateTimeFormat(undefined, { timeZone: zone }); } catch (_) { return {}; }
    return { timeZone: zone, timeZoneName: "short" };
  }
  function at(iso, zone) {
    const d = new Date(iso);
    if (isNaN(d)) return iso;
    const thisYear = d.getFullYear() === new Date().getFullYear();
    const o = { year: thisYear ? undefined : "numeric", month: "short", day: "numeric" };
    const plain = fmtTime(iso, o);
    const z = zoneOpts(zone);
    if (!z.timeZone || fmtTime(iso, Object.assign({ timeZone: z.timeZone }, o)) === plain) return plain;
    return fmtTime(iso, Object.assign(o, z));
  }
  function day(date) {
    const d = new Date(date + "T12:00:00");
    if (isNaN(d)) return date;
    return d.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
  }
  // A count and the noun that agrees with it: count(1, "line", "lines") is "1 line". Both forms
  // are given whole ("entry"/"entries"); the server's twin is words::count.
  function count(n, one, many) {
    return Number(n).toLocaleString("en") + " " + (n === 1 ? one : many);
  }
  // "3 min ago", kept fresh.
  function ago(iso, zone) {
    const s = Math.round((Date.now() - Date.parse(iso)) / 1000);
    if (!isFinite(s)) return iso;
    if (s < 45) return "just now";
    if (s < 3600) return Math.round(s / 60) + " min ago";
    if (s < 86400) return Math.round(s / 3600) + " h ago";
    return at(iso, zone);
  }
  function refreshTimes(root) {
    const r = root || document;
    r.querySelectorAll("time.ago").forEach((t) => {
      const iso = t.getAttribute("datetime");
      t.textContent = ago(iso, t.dataset.zone);
      t.title = at(iso, t.dataset.zone);
    });
    r.querySelectorAll("time.at").forEach((t) => { t.textContent = at(t.getAttribute("datetime"), t.dataset.zone); });
    r.querySelectorAll("time.day").forEach((t) => { t.textContent = day(t.getAttribute("datetime")); });
    // time.here beside a station's time: the same moment on the viewer's own clock, "(Dec 6,
    // 23:18 your time)", shown only when the station's clock (data-zone) reads otherwise.
    r.querySelectorAll("time.here").forEach((t) => {
      const iso = t.getAttribute("datetime"), mine = at(iso);
      t.hidden = at(iso, t.dataset.zone) === mine;
      t.textContent = t.hidden ? "" : "(" + mine + " your time)";
    });
  }

  // One shared player for every play button; a second press stops.
  const player = new Audio();
  player.preload = "none";
  let playing = null;
  function stopPlaying() {
    if (playing) playing.classList.remove("playing");
    playing = null;
  }
  player.addEventListener("ended", stopPlaying);
  player.addEventListener("pause", stopPlaying);
  player.addEventListener("error", () => {
    if (playing) toast("This recording cannot be played (audio expired or missing).", "bad");
    stopPlaying();
  });
  document.addEventListener("click", (ev) => {
    const btn = ev.target.closest("button.play[data-audio]");
    if (btn) {
      if (playing === btn) { player.pause(); return; }
      stopPlaying();
      player.src = btn.dataset.audio;
      playing = btn;
      btn.classList.add("playing");
      player.play().catch(() => stopPlaying());
      return;
    }
    const copy = ev.target.closest("[data-copy]");
    if (copy) {
      const target = copy.dataset.copy.startsWith("#") ? document.querySelector(copy.dataset.copy) : null;
      const text = target ? (target.value || target.textContent) : copy.dataset.copy;
      const done = () => toast("Copied", "ok");
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text.trim()).then(done, () => fallbackCopy(text, done));
      } else {
        fallbackCopy(text, done);
      }
    }
  });
  function fallbackCopy(text, done) {
    const ta = document.createElement("textarea");
    ta.value = text.trim();
    document.body.appendChild(ta);
    ta.select();
    try { document.execCommand("copy"); done(); } catch (_) { toast("Select the text and copy it", "bad"); }
    ta.remove();
  }

  // A select marked data-autosubmit sends its form on change (the team switcher).
  document.addEventListener("change", (ev) => {
    const sel = ev.target.closest("select[data-autosubmit]");
    if (sel && sel.form) sel.form.submit();
  });

  // Close the account menu when clicking elsewhere.
  document.addEventListener("click", (ev) => {
    document.querySelectorAll("details.account[open]").forEach((d) => { if (!d.contains(ev.target)) d.open = false; });
  });

  // A zone move under way (issue 37): the line polls its progress every 3 s and goes away
  // when the statistics are all in their new zones.
  function zoneMoves() {
    const line = document.querySelector("[data-zone-moves]");
    if (!line || line.hidden) return;
    const tick = async () => {
      const r = await api("GET", "/stats/time-zone-moves");
      if (r.ok && r.data && !r.data.running) { line.hidden = true; return; }
      if (r.ok && r.data) {
        const pct = r.data.total > 0 ? Math.floor((100 * r.data.done) / r.data.total) : 0;
        const out = line.querySelector("[data-zone-pct]");
        if (out) out.textContent = pct + " %";
      }
      setTimeout(tick, 3000);
    };
    setTimeout(tick, 3000);
  }

  document.addEventListener("DOMContentLoaded", () => {
    toastLeftBeforeReload();
    refreshTimes();
    setInterval(refreshTimes, 30000);
    zoneMoves();
  });
  document.addEventListener("htmx:afterSwap", (ev) => refreshTimes(ev.target));
  document.addEventListener("htmx:responseError", (ev) => {
    const xhr = ev.detail.xhr;
    let data = null;
    try { data = JSON.parse(xhr.responseText); } catch (_) { data = null; }
    if (signedOut(xhr.status, "", data)) toSignIn();
    else toast((data && data.message) || "That did not work (" + xhr.status + ").", "bad");
  });

  // Declarative API forms and buttons, for settings pages:
  //   <form data-api="PUT /auth/me/profile" data-then="reload|toast" data-result="#box" data-refresh="#list">
  //   <button data-api="DELETE /api-keys/ID" data-confirm="Revoke this key?">
  // Field names may be dotted (a.b) for nested JSON; data-type="number|list|json" converts.
  // With data-result, the answer's fields fill [data-field="path"] inside that box (text, or
  // the attribute named by data-attr), and the box is shown: how secrets are shown once.
  // A success says data-done ("Saved" for a form) in a toast, on the reloaded page too.
  function setPath(obj, path, value) {
    const keys = path.split(".");
    let o = obj;
    keys.slice(0, -1).forEach((k) => { o = o[k] = o[k] || {}; });
    o[keys[keys.length - 1]] = value;
  }
  function getPath(obj, path) {
    return path.split(".").reduce((o, k) => (o == null ? undefined : o[k]), obj);
  }
  function fieldValue(el) {
    if (el.type === "checkbox") return el.checked;
    const t = el.dataset.type;
    if (el.value === "" && t !== "list") return undefined;
    if (t === "number" || el.type === "number") return Number(el.value);
    if (t === "list") return el.value.split(/[,\n]/).map((x) => x.trim()).filter(Boolean);
    if (t === "json") { try { return JSON.parse(el.value); } catch (_) { return el.value; } }
    return el.value;
  }
  function showResult(sel, data) {
    const box = document.querySelector(sel);
    if (!box) return;
    box.querySelectorAll("[data-field]").forEach((el) => {
      let v = getPath(data, el.dataset.field);
      if (Array.isArray(v)) v = v.join("\n");
      if (v === undefined || v === null) v = "";
      if (el.dataset.attr) el.setAttribute(el.dataset.attr, String(v));
      else if ("value" in el && el.tagName !== "BUTTON") el.value = String(v);
      else el.textContent = typeof v === "object" ? JSON.stringify(v, null, 2) : String(v);
    });
    box.hidden = false;
  }
  // data-refresh="#a, #b": after a success that shows its answer in place (a new key, shown
  // once), those parts of the page are fetched again, so its lists name what was just made.
  async function refreshParts(selectors) {
    let doc;
    try {
      const resp = await fetch(location.href, { credentials: "same-origin" });
      if (!resp.ok) return;
      doc = new DOMParser().parseFromString(await resp.text(), "text/html");
    } catch (_) { return; }
    selectors.split(",").map((x) => x.trim()).filter(Boolean).forEach((sel) => {
      const now = document.querySelector(sel), fresh = doc.querySelector(sel);
      if (!now || !fresh) return;
      const part = document.importNode(fresh, true);
      now.replaceWith(part);
      refreshTimes(part);
    });
  }
  // A refusal about one field (the API's `field`) is said beside that field, which is marked
  // (aria-invalid, described by the message) and focused; the next answer clears the marks.
  function clearFields(form) {
    form.querySelectorAll(".field-error").forEach((n) => n.remove());
    form.querySelectorAll("[aria-invalid=true]").forEach((f) => {
      f.removeAttribute("aria-invalid");
      const ids = (f.getAttribute("aria-describedby") || "").split(" ").filter((id) => id && !id.startsWith("err-"));
      if (ids.length) f.setAttribute("aria-describedby", ids.join(" ")); else f.removeAttribute("aria-describedby");
    });
  }
  function markField(input, message) {
    if (!input) return false;
    const note = document.createElement("span");
    note.className = "error field-error";
    note.id = "err-" + (input.id || input.name || "field").replace(/[^A-Za-z0-9_-]/g, "-");
    note.setAttribute("role", "alert");
    note.textContent = message;
    (input.closest("label, td, .field") || input.parentElement).appendChild(note);
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", ((input.getAttribute("aria-describedby") || "") + " " + note.id).trim());
    input.focus();
    return true;
  }
  async function run(spec, body, opts) {
    const at = spec.indexOf(" ");
    const r = await api(spec.slice(0, at), spec.slice(at + 1), body);
    if (opts.form) clearFields(opts.form);
    if (!r.ok) {
      const msg = (r.data && r.data.message) || "That did not work (" + r.status + ").";
      const field = opts.form && r.data && r.data.field ? opts.form.querySelector(`[name="${CSS.escape(r.data.field)}"]`) : null;
      if (markField(field, msg)) { if (opts.errorBox) opts.errorBox.hidden = true; return; }
      if (opts.errorBox) { opts.errorBox.textContent = msg; opts.errorBox.hidden = false; } else toast(msg, "bad");
      return;
    }
    if (opts.errorBox) opts.errorBox.hidden = true;
    if (opts.result) showResult(opts.result, r.data || {});
    if (opts.refresh) refreshParts(opts.refresh);
    if (opts.then === "reload") reloadSaying(opts.done);
    else if (opts.then && opts.then.startsWith("/")) location.assign(opts.then);
    else toast(opts.done || "Saved", "ok");
  }
  document.addEventListener("submit", (ev) => {
    const form = ev.target.closest("form[data-api]");
    if (!form) return;
    ev.preventDefault();
    const body = {};
    Array.from(form.elements).forEach((el) => {
      if (!el.name || el.disabled || el.name === "_csrf") return;
      const v = fieldValue(el);
      if (v !== undefined) setPath(body, el.name, v);
    });
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
    run(form.dataset.api, form.dataset.nobody !== undefined ? undefined : body, {
      // A form saves: it says so, after a reload too. A button says only its data-done.
      then: form.dataset.then, result: form.dataset.result, done: form.dataset.done || "Saved",
      refresh: form.dataset.refresh, errorBox: form.querySelector(".form-error"), form,
    });
  });
  document.addEventListener("click", (ev) => {
    const btn = ev.target.closest("button[data-api]");
    if (!btn || btn.form && btn.form.dataset.api) return;
    if (btn.dataset.confirm && !window.confirm(btn.dataset.confirm)) return;
    let body;
    if (btn.dataset.body) { try { body = JSON.parse(btn.dataset.body); } catch (_) { body = undefined; } }
    // A button is off while its call runs (a double click sends once).
    if (btn.disabled) return;
    btn.disabled = true;
    run(btn.dataset.api, body, { then: btn.dataset.then || "reload", result: btn.dataset.result, done: btn.dataset.done })
      .finally(() => { btn.disabled = false; });
  });

  window.bh = { api, toast, reloadSaying, count, ago, at, day, fmtTime, hour12, refreshTimes, player, meta, clearFields, markField };
})();
