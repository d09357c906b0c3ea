// Exports: the range form's check, and the scheduled exports (add, edit, run now, delete)
// through /api (Admin+; the API enforces it).
"use strict";
(function () {
  const $ = (x) => document.getElementById(x);
  const msg = (res) => (res.data && res.data.message) || "The hub refused (" + res.status + ").";

  // The last day may not come before the first.
  const from = $("export-from"), to = $("export-to");
  if (from && to) {
    const sync = () => { to.min = from.value || ""; };
    from.addEventListener("change", sync);
    sync();
  }

  // An empty time zone is the team's (the hub fills it in).
  const form = $("sched-form");
  let editing = null;
  const submit = $("sched-submit"), cancel = $("sched-cancel"), title = $("sched-title");
  function startEdit(s) {
    editing = s.id;
    $("sched-name").value = s.name;
    $("sched-format").value = s.format;
    $("sched-days").value = s.days;
    $("sched-cron").value = s.cron;
    $("sched-tz").value = s.timezone;
    if (s.channelId) $("sched-channel").value = s.channelId;
    $("sched-enabled").checked = s.enabled;
    title.textContent = "Edit “" + s.name + "”";
    submit.textContent = "Save changes";
    cancel.hidden = false;
    $("sched-details").open = true;
    $("sched-error").hidden = true;
    $("sched-name").focus();
  }
  if (cancel) cancel.addEventListener("click", () => location.reload());
  if (form) form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const box = $("sched-error");
    const days = Number($("sched-days").value || 7);
    const max = Number($("sched-days").max);
    if (!Number.isInteger(days) || days < 1 || days > max) {
      box.textContent = "Days covered must be a whole number from 1 to " + max + ".";
      box.hidden = false;
      return;
    }
    const body = {
      name: $("sched-name").value.trim(),
      format: $("sched-format").value,
      filters: { days },
      cron: $("sched-cron").value.trim(),
      timezone: $("sched-tz").value.trim() || undefined,
      channelId: $("sched-channel").value,
      enabled: $("sched-enabled").checked,
    };
    const res = editing
      ? await window.bh.api("PUT", "/exports/scheduled/" + encodeURIComponent(editing), body)
      : await window.bh.api("POST", "/exports/scheduled", body);
    if (!res.ok) { box.textContent = msg(res); box.hidden = false; return; }
    location.reload();
  });
  document.addEventListener("click", async (ev) => {
    const edit = ev.target.closest("[data-edit-sched]");
    if (edit) {
      try { startEdit(JSON.parse(edit.dataset.editSched)); } catch (_) { /* the page wrote it */ }
      return;
    }
    const run = ev.target.closest("[data-run-sched]");
    if (run) {
      if (!window.confirm("Send " + run.dataset.name + " now? Its schedule stays as it is.")) return;
      run.disabled = true;
      const res = await window.bh.api("POST", "/exports/scheduled/" + encodeURIComponent(run.dataset.runSched) + "/run");
      run.disabled = false;
      if (!res.ok) { window.bh.toast(msg(res), "bad"); return; }
      if (res.data.lastStatus === "failed") { window.bh.toast("It did not run: " + res.data.lastError, "bad"); return; }
      window.bh.toast("Sent: it is on its way to the channel.", "ok");
      setTimeout(() => location.reload(), 1200);
      return;
    }
    const del = ev.target.closest("[data-delete-sched]");
    if (!del) return;
    if (!window.confirm("Delete the scheduled export " + del.dataset.name + "?")) return;
    const res = await window.bh.api("DELETE", "/exports/scheduled/" + encodeURIComponent(del.dataset.deleteSched));
    if (!res.ok) { window.bh.toast(msg(res), "bad"); return; }
    location.reload();
  });
})();
