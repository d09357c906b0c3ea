// Alerts: acknowledge (then refresh the list fragment), channels (add, delete, send a test and
// show the receiver's answer) and rules (add, edit, delete), all through /api.
"use strict";
(function () {
  const $ = (x) => document.getElementById(x);
  const msg = (res) => (res.data && res.data.message) || "The hub refused (" + res.status + ").";
  const show = (box, text) => { if (box) { box.textContent = text; box.hidden = !text; } };

  function refreshList() {
    const list = $("alert-list");
    if (!list || !window.htmx) { location.reload(); return; }
    window.htmx.ajax("GET", "/alerts/list?show=" + encodeURIComponent(list.dataset.show), { target: "#alert-list", swap: "outerHTML" });
  }

  document.addEventListener("click", async (ev) => {
    const ack = ev.target.closest("[data-ack]");
    if (ack) {
      ack.disabled = true;
      const res = await window.bh.api("POST", "/alerts/" + encodeURIComponent(ack.dataset.ack) + "/acknowledge");
      if (!res.ok) { ack.disabled = false; window.bh.toast(msg(res), "bad"); return; }
      window.bh.toast("Acknowledged", "ok");
      refreshList();
      return;
    }
    const test = ev.target.closest("[data-test]");
    if (test) {
      const out = test.closest("li").querySelector(".test-result");
      test.disabled = true;
      out.className = "test-result small";
      out.textContent = "Sending a test…";
      const res = await window.bh.api("POST", "/alert-rules/channels/" + encodeURIComponent(test.dataset.test) + "/test");
      test.disabled = false;
      if (!res.ok) { out.textContent = msg(res); out.classList.add("bad"); return; }
      const r = res.data;
      const status = r.httpStatus ? "HTTP " + r.httpStatus : "no HTTP status";
      out.textContent = (r.delivered ? "Delivered: " : "Not delivered: ") + status + " in " + r.durationMs + " ms" + (r.error ? " · " + r.error : "");
      out.classList.add(r.delivered ? "good" : "bad");
      return;
    }
    const delCh = ev.target.closest("[data-delete-channel]");
    if (delCh) {
      if (!window.confirm("Delete the channel " + delCh.dataset.name + "? Rules stop sending to it.")) return;
      const res = await window.bh.api("DELETE", "/alert-rules/channels/" + encodeURIComponent(delCh.dataset.deleteChannel));
      if (!res.ok) { window.bh.toast(msg(res), "bad"); return; }
      location.reload();
      return;
    }
    const delRule = ev.target.closest("[data-delete-rule]");
    if (delRule) {
      if (!window.confirm("Delete the rule " + delRule.dataset.name + "?")) return;
      const res = await window.bh.api("DELETE", "/alert-rules/rules/" + encodeURIComponent(delRule.dataset.deleteRule));
      if (!res.ok) { window.bh.toast(msg(res), "bad"); return; }
      location.reload();
      return;
    }
    const edit = ev.target.closest("[data-edit-rule]");
    if (edit) editRule(edit.dataset.editRule);
  });

  // Channel form: only the fields of the chosen type are shown and sent.
  const chType = $("ch-type");
  function fields() {
    document.querySelectorAll("#channel-form [data-for]").forEach((l) => {
      l.hidden = !l.dataset.for.split(" ").includes(chType.value);
    });
  }
  if (chType) { chType.addEventListener("change", fields); fields(); }
  const chForm = $("channel-form");
  if (chForm) chForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const type = chType.value;
    const config = {};
    if (type === "email") config.to = $("ch-to").value.split(",").map((s) => s.trim()).filter(Boolean);
    else if (type === "chat_bot") { config.token = $("ch-token").value.trim(); config.chatId = $("ch-chat").value.trim(); }
    else {
      config.url = $("ch-url").value.trim();
      const secret = $("ch-secret").value;
      if (type === "webhook" && secret) config.secret = secret;
    }
    const res = await window.bh.api("POST", "/alert-rules/channels", { type, name: $("ch-name").value.trim(), config });
    if (!res.ok) { show($("channel-error"), msg(res)); return; }
    location.reload();
  });

  // Rules: one form for add and edit.
  const ruleForm = $("rule-form");
  function rules() {
    const el = $("rules-data");
    try { return el ? JSON.parse(el.textContent) : []; } catch (_) { return []; }
  }
  function editRule(ruleId) {
    const r = rules().find((x) => x.id === ruleId);
    if (!r || !ruleForm) return;
    ruleForm.dataset.id = r.id;
    $("rule-name").value = r.name;
    $("rule-trigger").value = r.trigger;
    $("rule-cooldown").value = r.cooldownMinutes;
    $("rule-enabled").checked = r.enabled;
    const c = r.conditions;
    $("rule-conditions").value = c && Object.keys(c).length ? JSON.stringify(c) : "";
    const system = !!r.systemKey;
    $("rule-name").disabled = system;
    $("rule-trigger").disabled = system;
    $("rule-conditions").disabled = system;
    ruleForm.querySelectorAll("input[name=rule-channel]").forEach((b) => { b.checked = r.channelIds.includes(b.value); });
    $("rule-summary").textContent = "Edit rule: " + r.name;
    $("rule-submit").textContent = "Save changes";
    $("rule-add").open = true;
    $("rule-name").focus();
  }
  if (ruleForm) {
    ruleForm.addEventListener("reset", () => {
      ruleForm.dataset.id = "";
      ["rule-name", "rule-trigger", "rule-conditions"].forEach((x) => { $(x).disabled = false; });
      $("rule-summary").textContent = "Add a rule";
      $("rule-submit").textContent = "Save rule";
      show($("rule-error"), "");
    });
    ruleForm.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const editing = ruleForm.dataset.id;
      const body = {
        cooldownMinutes: Number($("rule-cooldown").value || 0),
        enabled: $("rule-enabled").checked,
        channelIds: Array.from(ruleForm.querySelectorAll("input[name=rule-channel]:checked")).map((b) => b.value),
      };
      if (!$("rule-name").disabled) {
        body.name = $("rule-name").value.trim();
        body.trigger = $("rule-trigger").value;
        const text = $("rule-conditions").value.trim();
        if (text) {
          try { body.conditions = JSON.parse(text); } catch (e) { show($("rule-error"), "Conditions are not valid JSON: " + e.message); return; }
        } else {
          body.conditions = {};
        }
      }
      const res = editing
        ? await window.bh.api("PUT", "/alert-rules/rules/" + encodeURIComponent(editing), body)
        : await window.bh.api("POST", "/alert-rules/rules", body);
      if (!res.ok) { show($("rule-error"), msg(res)); return; }
      location.reload();
    });
  }
})();
