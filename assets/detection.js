// Detection detail: the playhead follows the audio, a click on the spectrogram seeks, a drag draws
// an annotation box (time and frequency from the picture's mapping), votes, comments and share.
"use strict";
(function () {
  const $ = (sel) => document.querySelector(sel);
  // Reloads a fragment (its element carries hx-get) in place.
  function refresh(sel) {
    const el = $(sel);
    if (el && window.htmx) return htmx.ajax("GET", el.getAttribute("hx-get"), { target: sel, swap: "outerHTML" });
    location.reload();
  }
  async function reloadBoxes(id) {
    const target = $("#boxes");
    if (!target) return;
    const r = await fetch("/detections/" + id + "/boxes", { credentials: "same-origin" });
    if (r.ok) target.innerHTML = await r.text();
  }
  function failed(r) {
    bh.toast((r.data && r.data.message) || "That did not work (" + r.status + ").", "bad");
  }

  function spectrogram() {
    const box = $("#spectro");
    const audio = $("#det-audio");
    if (!box || !audio) return;
    const map = {
      secondsPerPixel: parseFloat(box.dataset.secondsPerPixel),
      minHz: parseFloat(box.dataset.minHz),
      maxHz: parseFloat(box.dataset.maxHz),
      duration: parseFloat(box.dataset.duration),
      span: parseFloat(box.dataset.span),
    };
    const playhead = $("#playhead");
    const place = () => {
      const t = audio.currentTime || 0;
      playhead.style.left = Math.min(100, (t / map.span) * 100) + "%";
    };
    let frame = 0;
    const tick = () => { place(); if (!audio.paused) frame = requestAnimationFrame(tick); };
    audio.addEventListener("play", () => { cancelAnimationFrame(frame); frame = requestAnimationFrame(tick); });
    ["pause", "seeked", "timeupdate", "loadedmetadata"].forEach((e) => audio.addEventListener(e, place));

    // Fractions (0..1) of the picture under a pointer event.
    const at = (ev) => {
      const r = box.getBoundingClientRect();
      return {
        x: Math.min(1, Math.max(0, (ev.clientX - r.left) / r.width)),
        y: Math.min(1, Math.max(0, (ev.clientY - r.top) / r.height)),
      };
    };
    const seconds = (x) => Math.min(map.duration, x * map.span);
    const hz = (y) => map.maxHz - y * (map.maxHz - map.minHz);
    const edit = box.dataset.edit === "true";
    const draft = $("#draft");
    const form = $("#box-form");
    let start = null;
    let chosen = null;
    const drawDraft = (a, b) => {
      const left = Math.min(a.x, b.x), top = Math.min(a.y, b.y);
      draft.style.left = left * 100 + "%";
      draft.style.top = top * 100 + "%";
      draft.style.width = Math.abs(a.x - b.x) * 100 + "%";
      draft.style.height = Math.abs(a.y - b.y) * 100 + "%";
      draft.hidden = false;
    };
    box.addEventListener("pointerdown", (ev) => {
      if (ev.button !== undefined && ev.button > 0) return;
      start = at(ev);
      if (box.setPointerCapture && ev.pointerId !== undefined) {
        try { box.setPointerCapture(ev.pointerId); } catch (_) { /* synthetic pointers */ }
      }
      ev.preventDefault();
    });
    box.addEventListener("pointermove", (ev) => {
      if (!start || !edit) return;
      drawDraft(start, at(ev));
    });
    const finish = (ev) => {
      if (!start) return;
      const end = at(ev);
      const r = box.getBoundingClientRect();
      const dragged = Math.abs(end.x - start.x) * r.width > 6 && Math.abs(end.y - start.y) * r.height > 6;
      if (!dragged || !edit) {
        draft.hidden = true;
        audio.currentTime = seconds(end.x);
        place();
        start = null;
        return;
      }
      drawDraft(start, end);
      chosen = {
        timeStartMs: Math.round(seconds(Math.min(start.x, end.x)) * 1000),
        timeEndMs: Math.round(seconds(Math.max(start.x, end.x)) * 1000),
        freqLowHz: Math.round(hz(Math.max(start.y, end.y))),
        freqHighHz: Math.round(hz(Math.min(start.y, end.y))),
      };
      start = null;
      if (form) {
        $("#box-range").textContent = (chosen.timeStartMs / 1000).toFixed(2) + "–" + (chosen.timeEndMs / 1000).toFixed(2) +
          " s, " + (chosen.freqLowHz / 1000).toFixed(1) + "–" + (chosen.freqHighHz / 1000).toFixed(1) + " kHz";
        form.hidden = false;
        $("#box-vote").focus();
      }
    };
    box.addEventListener("pointerup", finish);
    box.addEventListener("pointercancel", () => { start = null; draft.hidden = true; });
    if (form) {
      $("#box-cancel").addEventListener("click", () => { form.hidden = true; draft.hidden = true; chosen = null; });
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        if (!chosen) return;
        const body = Object.assign({ vote: $("#box-vote").value }, chosen);
        const notes = $("#box-notes").value.trim();
        if (notes) body.notes = notes;
        const r = await bh.api("POST", "/detections/" + box.dataset.id + "/annotate", body);
        if (!r.ok) return failed(r);
        bh.toast("Annotation saved", "ok");
        form.hidden = true;
        draft.hidden = true;
        chosen = null;
        $("#box-notes").value = "";
        await reloadBoxes(box.dataset.id);
        refresh("#votes");
      });
    }
  }

  document.addEventListener("click", async (ev) => {
    const vote = ev.target.closest("button[data-vote]");
    if (vote) {
      vote.disabled = true;
      const r = await bh.api("POST", "/detections/" + vote.dataset.id + "/verify", { vote: vote.dataset.vote });
      vote.disabled = false;
      if (!r.ok) return failed(r);
      bh.toast("Vote saved", "ok");
      refresh("#votes");
      // Your boxes carry your vote: redraw them so none keeps the old one.
      reloadBoxes(vote.dataset.id);
      return;
    }
    const del = ev.target.closest("button[data-comment]");
    if (del) {
      if (!confirm("Delete this comment?")) return;
      const r = await bh.api("DELETE", "/detections/" + del.dataset.id + "/comments/" + del.dataset.comment);
      if (!r.ok) return failed(r);
      refresh("#comments");
      return;
    }
    const revoke = ev.target.closest("button.revoke-share");
    if (revoke) {
      if (!confirm("Revoke this share link? Whoever has it will no longer see this detection.")) return;
      const r = await bh.api("DELETE", "/detections/" + revoke.dataset.id + "/shares/" + revoke.dataset.share);
      if (!r.ok) return failed(r);
      bh.toast("Share link revoked", "ok");
      refresh("#shares");
      return;
    }
    const share = ev.target.closest("#share");
    if (share) {
      const r = await bh.api("POST", "/detections/" + share.dataset.id + "/shares");
      if (!r.ok) return failed(r);
      // A link host the hub could not look up (detection_shares.rs): warn, and offer the link
      // at the address this page was opened with.
      const badHost = ($("#shares") || { dataset: {} }).dataset.linkHost;
      refresh("#shares");
      // The page link (a page for people); the API link stays in the answer for scripts.
      const url = r.data.pageUrl || r.data.url;
      const field = $("#share-url");
      field.value = url;
      field.hidden = false;
      let here = $("#share-url-here");
      if (badHost) {
        const u = new URL(url, location.href);
        if (!here) {
          here = document.createElement("input");
          here.id = "share-url-here";
          here.className = field.className;
          here.type = "text";
          here.readOnly = true;
          here.setAttribute("aria-label", "Share link at this page's address");
          field.after(here);
        }
        here.value = location.origin + u.pathname + u.search;
        here.hidden = false;
        bh.toast("Links starting with " + badHost + " may not open on other devices. The second box has this link at the address of this page.", "bad");
      }
      field.select();
      const done = () => bh.toast("Share link copied", "ok");
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(url).then(done, () => bh.toast("Copy the selected link", "ok"));
      } else {
        try { document.execCommand("copy"); done(); } catch (_) { bh.toast("Copy the selected link", "ok"); }
      }
    }
  });

  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest("#comment-form");
    if (!form) return;
    ev.preventDefault();
    const text = form.querySelector("textarea").value.trim();
    if (!text) return;
    const r = await bh.api("POST", "/detections/" + form.dataset.id + "/comments", { body: text });
    if (!r.ok) return failed(r);
    refresh("#comments");
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", spectrogram);
  else spectrogram();
})();
