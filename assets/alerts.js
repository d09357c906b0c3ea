// Alerts: the list follows the team's WebSocket (a new alert appears without a reload) and is
// refreshed after an acknowledgement; channels (add, edit, delete, send a test and say what
// happened) and rules (add, edit, delete) go through /api. The rule form is fields, never JSON:
// species chips come from the species picker of detection_settings.js (codes are sent).
"use strict";
(function () {
  const bh = window.bh;
  const $ = (x) => document.getElementById(x);
  const msg = (res) => (res.data && res.data.message) || "The hub refused (" + res.status + ").";
  const show = (box, text) => { if (box) { box.textContent = text; box.hidden = !text; } };
  const island = (id) => {
    const el = $(id);
    try { return el ? JSON.parse(el.textContent) : []; } catch (_) { return []; }
  };

  // ---- The alert list, live ---------------------------------------------------------------
  function refreshList() {
    const list = $("alert-list");
    if (!list || !window.htmx) { location.reload(); return; }
    window.htmx.ajax("GET", "/alerts/list?show=" + encodeURIComponent(list.dataset.show), { target: "#alert-list", swap: "outerHTML" });
  }
  const dot = $("alerts-live");
  function live(on, why) {
    if (!dot) return;
    dot.classList.toggle("on", on);
    dot.title = why;
  }
  let backoff = 1000;
  let pending = null;
  function connect() {
    const team = bh.meta("bh-team");
    if (!team || !$("alert-list")) return;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${proto}//${location.host}/api/ws/events?tenantId=${encodeURIComponent(team)}`);
    socket.addEventListener("open", () => { backoff = 1000; live(true, "live: new alerts appear here"); });
    socket.addEventListener("message", (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch (_) { return; }
      if (m.type !== "alert" || !m.data) return;
      if (m.data.title) bh.toast("New alert: " + m.data.title, "ok");
      // Acknowledged alerts are not new: that view stays as it is.
      if ($("alert-list").dataset.show === "acknowledged") return;
      // A burst of alerts (several satellites at once) is one refresh.
      clearTimeout(pending);
      pending = setTimeout(refreshList, 300);
    });
    socket.addEventListener("close", () => {
      live(false, "live: reconnecting");
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 30000);
    });
  }
  connect();

  // ---- Buttons ----------------------------------------------------------------------------
  document.addEventListener("click", async (ev) => {
    const ack = ev.target.closest("[data-ack]");
    if (ack) {
      ack.disabled = true;
      const res = await bh.api("POST", "/alerts/" + encodeURIComponent(ack.dataset.ack) + "/acknowledge");
      if (!res.ok) { ack.disabled = false; bh.toast(msg(res), "bad"); return; }
      bh.toast("Acknowledged", "ok");
      refreshList();
      return;
    }
    const test = ev.target.closest("[data-test]");
    if (test) {
      const out = test.closest("li").querySelector(".test-result");
      test.disabled = true;
      out.className = "test-result small";
      out.textContent = "Sending a test…";
      const res = await bh.api("POST", "/alert-rules/channels/" + encodeURIComponent(test.dataset.test) + "/test");
      test.disabled = false;
      if (!res.ok) { out.textContent = msg(res); out.classList.add("bad"); return; }
      const r = res.data;
      out.textContent = r.summary + " (" + r.durationMs + " ms)";
      out.classList.add(r.delivered ? "good" : "bad");
      return;
    }
    const delCh = ev.target.closest("[data-delete-channel]");
    if (delCh) {
      if (!window.confirm("Delete the channel " + delCh.dataset.name + "? Rules stop sending to it.")) return;
      const res = await bh.api("DELETE", "/alert-rules/channels/" + encodeURIComponent(delCh.dataset.deleteChannel));
      if (!res.ok) { bh.toast(msg(res), "bad"); return; }
      location.reload();
      return;
    }
    const delRule = ev.target.closest("[data-delete-rule]");
    if (delRule) {
      if (!window.confirm("Delete the rule " + delRule.dataset.name + "?")) return;
      const res = await bh.api("DELETE", "/alert-rules/rules/" + encodeURIComponent(delRule.dataset.deleteRule));
      if (!res.ok) { bh.toast(msg(res), "bad"); return; }
      location.reload();
      return;
    }
    const editCh = ev.target.closest("[data-edit-channel]");
    if (editCh) { editChannel(editCh.dataset.editChannel); return; }
    const edit = ev.target.closest("[data-edit-rule]");
    if (edit) editRule(edit.dataset.editRule);
  });

  // A number field's value, or an error naming it in the form's words.
  function numberIn(id) {
    const el = $(id);
    const v = el.value.trim();
    if (v === "") return { value: null };
    const n = Number(v);
    const label = el.closest("label").firstChild.textContent.trim();
    const whole = el.step === "1";
    if (!Number.isFinite(n) || n < Number(el.min) || n > Number(el.max) || (whole && !Number.isInteger(n))) {
      return { error: `${label} must be ${whole ? "a whole number" : "a number"} from ${el.min} to ${el.max}.` };
    }
    return { value: n };
  }

  // ---- Channels: one form for add and edit; only the chosen type's fields show ---------------
  const chType = $("ch-type");
  const chForm = $("channel-form");
  function fields() {
    document.querySelectorAll("#channel-form [data-for]").forEach((l) => {
      l.hidden = !l.dataset.for.split(" ").includes(chType.value);
    });
  }
  if (chType) { chType.addEventListener("change", fields); fields(); }
  function editChannel(id) {
    const c = island("channels-data").find((x) => x.id === id);
    if (!c || !chForm) return;
    chForm.reset();
    chForm.dataset.id = c.id;
    chType.value = c.type;
    chType.disabled = true;
    fields();
    const cfg = c.config || {};
    $("ch-name").value = c.name;
    $("ch-enabled").checked = c.enabled;
    $("ch-to").value = Array.isArray(cfg.to) ? cfg.to.join(", ") : (cfg.to || "");
    // A chat service's URL is a secret: it is never shown, only replaced.
    $("ch-url").value = c.type === "webhook" ? (cfg.url || "") : "";
    $("ch-url").placeholder = c.type === "webhook" ? "" : "Leave empty to keep the saved URL";
    $("ch-chat").value = cfg.chatId === undefined || cfg.chatId === null ? "" : String(cfg.chatId);
    $("ch-keep").hidden = false;
    $("channel-summary").textContent = "Edit channel: " + c.name;
    $("channel-submit").textContent = "Save changes";
    $("channel-add").open = true;
    $("ch-name").focus();
  }
  if (chForm) {
    chForm.addEventListener("reset", () => {
      chForm.dataset.id = "";
      chType.disabled = false;
      $("ch-url").placeholder = "http://192.168.1.20:8123/api/webhook/birds";
      $("ch-keep").hidden = true;
      $("channel-summary").textContent = "Add a channel";
      $("channel-submit").textContent = "Add channel";
      show($("channel-error"), "");
      setTimeout(fields, 0);
    });
    chForm.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const editing = chForm.dataset.id;
      const type = chType.value;
      const config = {};
      const url = $("ch-url").value.trim();
      if (type === "email") {
        config.to = $("ch-to").value.split(",").map((s) => s.trim()).filter(Boolean);
      } else if (type === "chat_bot") {
        const token = $("ch-token").value.trim();
        if (token || !editing) config.token = token;
        config.chatId = $("ch-chat").value.trim();
      } else {
        if (url || !editing || type === "webhook") config.url = url;
        const secret = $("ch-secret").value;
        if (type === "webhook" && secret) config.secret = secret;
      }
      const body = { name: $("ch-name").value.trim(), enabled: $("ch-enabled").checked };
      if (Object.keys(config).length) body.config = config;
      const res = editing
        ? await bh.api("PUT", "/alert-rules/channels/" + encodeURIComponent(editing), body)
        : await bh.api("POST", "/alert-rules/channels", Object.assign({ type }, body));
      if (!res.ok) { show($("channel-error"), msg(res)); return; }
      location.reload();
    });
  }

  // ---- Rules: one form for add and edit ------------------------------------------------------
  const ruleForm = $("rule-form");
  const speciesBox = () => document.querySelector("#rule-form [data-key=rule-species]");
  const ticked = (name) => Array.from(ruleForm.querySelectorAll(`input[name=${name}]:checked`)).map((b) => b.value);
  const tick = (name, values) => ruleForm.querySelectorAll(`input[name=${name}]`).forEach((b) => { b.checked = values.includes(b.value); });
  function sections() {
    const system = ruleForm.dataset.system === "true";
    const trigger = $("rule-trigger").value;
    ruleForm.querySelectorAll("[data-when]").forEach((s) => {
      s.hidden = system || !s.dataset.when.split(" ").includes(trigger);
    });
    ruleForm.querySelector(".rule-head").hidden = system;
    // The clock rule's cooldown spaces the alerts of a clock that flaps; the offline rule has none.
    const clockRule = ruleForm.dataset.systemKey === "satellite_clock";
    $("rule-cooldown-box").hidden = system ? !clockRule : trigger !== "detection";
    $("rule-system-note").hidden = !system;
  }
  function clearSpecies() {
    const box = speciesBox();
    box.querySelectorAll("li.chip").forEach((c) => c.remove());
    const empty = box.querySelector(".chips-empty");
    if (empty) empty.hidden = false;
  }
  function editRule(ruleId) {
    const r = island("rules-data").find((x) => x.id === ruleId);
    if (!r || !ruleForm) return;
    ruleForm.reset();
    ruleForm.dataset.id = r.id;
    ruleForm.dataset.system = r.systemKey ? "true" : "false";
    ruleForm.dataset.systemKey = r.systemKey || "";
    $("rule-name").value = r.name;
    $("rule-trigger").value = r.trigger;
    $("rule-cooldown").value = r.cooldownMinutes;
    $("rule-enabled").checked = r.enabled;
    const c = r.conditions || {};
    clearSpecies();
    (r.speciesNames || []).forEach((s) => bh.speciesPick.add(speciesBox(), s));
    tick("rule-special", c.special || []);
    tick("rule-sat", c.satelliteIds || []);
    $("rule-confidence").value = c.minConfidence === undefined ? "" : c.minConfidence;
    $("rule-hours-from").value = c.hours ? String(c.hours.from) : "";
    $("rule-hours-to").value = c.hours ? String(c.hours.to) : "";
    if (r.trigger === "absence") { $("rule-minutes").value = c.minutes; $("rule-of").value = c.of || "detection"; }
    if (r.trigger === "trend") {
      $("rule-metric").value = c.metric;
      $("rule-direction").value = c.direction;
      $("rule-percent").value = c.percent;
      $("rule-baseline").value = c.baselineDays || 7;
      $("rule-trend-sat").value = c.satelliteId || "";
    }
    tick("rule-channel", r.channelIds);
    sections();
    $("rule-summary").textContent = "Edit rule: " + r.name;
    $("rule-submit").textContent = "Save changes";
    $("rule-add").open = true;
    (r.systemKey ? $("rule-enabled") : $("rule-name")).focus();
  }
  // The conditions of the chosen trigger, or an error in the form's words.
  function conditions(trigger) {
    const c = {};
    const num = (id) => { const n = numberIn(id); if (n.error) throw new Error(n.error); return n.value; };
    if (trigger === "detection") {
      const species = Array.from(speciesBox().querySelectorAll("li.chip")).map((li) => li.dataset.code);
      if (species.length) c.species = species;
      const special = ticked("rule-special");
      if (special.length) c.special = special;
      const conf = num("rule-confidence");
      if (conf !== null) c.minConfidence = conf;
      const sats = ticked("rule-sat");
      if (sats.length) c.satelliteIds = sats;
      const from = $("rule-hours-from").value, to = $("rule-hours-to").value;
      if ((from === "") !== (to === "")) throw new Error("Choose both hours, or “Any time” for both.");
      if (from !== "" && from === to) throw new Error("The hours must differ (choose “Any time” for all day).");
      if (from !== "") c.hours = { from: Number(from), to: Number(to) };
    } else if (trigger === "absence") {
      c.minutes = num("rule-minutes");
      if (c.minutes === null) throw new Error("Say how many quiet minutes fire the rule.");
      c.of = $("rule-of").value;
      const sats = ticked("rule-sat");
      if (sats.length) c.satelliteIds = sats;
    } else {
      c.metric = $("rule-metric").value;
      c.direction = $("rule-direction").value;
      c.percent = num("rule-percent");
      if (c.percent === null) throw new Error("Say by how many percent.");
      if (c.direction === "fall" && c.percent > 100) throw new Error("A fall can be at most 100%.");
      const days = num("rule-baseline");
      if (days !== null) c.baselineDays = days;
      if ($("rule-trend-sat").value) c.satelliteId = $("rule-trend-sat").value;
    }
    return c;
  }
  if (ruleForm) {
    $("rule-trigger").addEventListener("change", sections);
    sections();
    ruleForm.addEventListener("reset", () => {
      ruleForm.dataset.id = "";
      ruleForm.dataset.system = "false";
      ruleForm.dataset.systemKey = "";
      clearSpecies();
      $("rule-summary").textContent = "Add a rule";
      $("rule-submit").textContent = "Save rule";
      show($("rule-error"), "");
      setTimeout(sections, 0);
    });
    ruleForm.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const editing = ruleForm.dataset.id;
      const system = ruleForm.dataset.system === "true";
      const body = { enabled: $("rule-enabled").checked, channelIds: ticked("rule-channel") };
      try {
        if (!system) {
          body.name = $("rule-name").value.trim();
          if (!body.name) throw new Error("Give the rule a name.");
          body.trigger = $("rule-trigger").value;
          body.conditions = conditions(body.trigger);
          if (body.trigger === "detection") {
            const cool = numberIn("rule-cooldown");
            if (cool.error) throw new Error(cool.error);
            if (cool.value !== null) body.cooldownMinutes = cool.value;
          }
        } else if (ruleForm.dataset.systemKey === "satellite_clock") {
          const cool = numberIn("rule-cooldown");
          if (cool.error) throw new Error(cool.error);
          if (cool.value !== null) body.cooldownMinutes = cool.value;
        }
      } catch (e) {
        show($("rule-error"), e.message);
        return;
      }
      show($("rule-error"), "");
      const res = editing
        ? await bh.api("PUT", "/alert-rules/rules/" + encodeURIComponent(editing), body)
        : await bh.api("POST", "/alert-rules/rules", body);
      if (!res.ok) { show($("rule-error"), msg(res)); return; }
      location.reload();
    });
  }
})();
