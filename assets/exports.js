// Scheduled exports: add and delete through /api (Admin+; the API enforces it).
"use strict";
(function () {
  const $ = (x) => document.getElementById(x);
  const msg = (res) => (res.data && res.data.message) || "The hub refused (" + res.status + ").";
  const tz = $("sched-tz");
  if (tz && window.Intl) {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (zone) tz.value = zone;
  }
  const form = $("sched-form");
  if (form) form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = {
      name: $("sched-name").value.trim(),
      format: $("sched-format").value,
      filters: { days: Number($("sched-days").value || 7) },
      cron: $("sched-cron").value.trim(),
      timezone: $("sched-tz").value.trim(),
      channelId: $("sched-channel").value,
      enabled: true,
    };
    const res = await window.bh.api("POST", "/exports/scheduled", body);
    const box = $("sched-error");
    if (!res.ok) { box.textContent = msg(res); box.hidden = false; return; }
    location.reload();
  });
  document.addEventListener("click", async (ev) => {
    const del = ev.target.closest("[data-delete-sched]");
    if (!del) return;
    if (!window.confirm("Delete the scheduled export " + del.dataset.name + "?")) return;
    const res = await window.bh.api("DELETE", "/exports/scheduled/" + encodeURIComponent(del.dataset.deleteSched));
    if (!res.ok) { window.bh.toast(msg(res), "bad"); return; }
    location.reload();
  });
})();
