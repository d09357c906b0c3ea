// Detection settings: species pickers (names in the viewer's language from /species/search,
// codes stored), the team's settings form (PUT /settings/tenant), a satellite's overrides
// (PUT /satellites/:id/config), a species' own minimum, and the two actions of a detection page.
// The API decides who may; its message is shown.
"use strict";
(function () {
  const bh = window.bh;
  const $ = (id) => document.getElementById(id);
  const msg = (r) => (r.data && r.data.message) || "The hub refused (" + r.status + ").";
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };

  // ---- Chips and rows -------------------------------------------------------------------
  function names(parent, s) {
    parent.appendChild(el("span", "common", s.common));
    if (s.sci && s.sci !== s.common) { parent.appendChild(document.createTextNode(" ")); parent.appendChild(el("em", "sci", s.sci)); }
  }
  function removeButton(s, text) {
    const b = el("button", "chip-remove", text);
    b.type = "button";
    b.setAttribute("aria-label", "Remove " + s.common);
    return b;
  }
  function refreshEmpty(box) {
    const empty = box.querySelector(".chips-empty, .map-empty");
    if (empty) empty.hidden = !!box.querySelector("li.chip, tr[data-code]");
  }
  // Adds species `s` ({code, common, sci}) to a list or a per-species table.
  function add(box, s) {
    if (box.dataset.kind === "list") {
      if (!box.querySelector(`li.chip[data-code="${CSS.escape(s.code)}"]`)) {
        const li = el("li", "chip");
        li.dataset.code = s.code;
        names(li, s);
        li.appendChild(removeButton(s, "×"));
        box.querySelector("ul.chips").appendChild(li);
      }
    } else {
      let tr = box.querySelector(`tr[data-code="${CSS.escape(s.code)}"]`);
      if (!tr) {
        tr = el("tr");
        tr.dataset.code = s.code;
        const th = el("th");
        th.scope = "row";
        names(th, s);
        const input = el("input");
        Object.assign(input, { type: "number", step: "0.01", min: "0.01", max: "0.99", value: box.dataset.default || "0.8" });
        input.setAttribute("aria-label", "Minimum confidence for " + s.common);
        const td = el("td");
        td.appendChild(input);
        const rm = el("td");
        rm.appendChild(removeButton(s, "Remove"));
        tr.append(th, td, rm);
        box.querySelector("tbody").appendChild(tr);
      }
      tr.querySelector("input").focus();
    }
    refreshEmpty(box);
  }

  // "Add every owl" is offered while the owls are not in its list, so removing them brings it back.
  function refreshOwls() {
    document.querySelectorAll("button.add-owls").forEach((b) => {
      b.hidden = !!document.querySelector(`[data-kind=list][data-key="${b.dataset.key}"] li.chip[data-code=owls]`);
    });
  }

  // Other pages' forms (the alert rule form) fill a species list with the same chips.
  bh.speciesPick = { add };

  // ---- The picker ---------------------------------------------------------------------
  let timer = null;
  function close(pick) {
    const list = pick.querySelector(".pick-results");
    list.hidden = true;
    pick.querySelector("input").setAttribute("aria-expanded", "false");
  }
  async function search(input) {
    const pick = input.closest(".picker");
    const list = pick.querySelector(".pick-results");
    const q = input.value.trim();
    if (!q && pick.dataset.classes !== "other") { close(pick); return; }
    const query = new URLSearchParams({ q, lang: pick.dataset.lang, kind: pick.dataset.classes, limit: "12" });
    const r = await bh.api("GET", "/species/search?" + query);
    if (input.value.trim() !== q) return; // typed on meanwhile
    list.textContent = "";
    const found = r.ok ? r.data.species : [];
    if (!r.ok) list.appendChild(el("li", "muted", msg(r)));
    else if (!found.length) list.appendChild(el("li", "muted", "Nothing found for “" + q + "”."));
    found.forEach((s) => {
      const li = el("li", "option");
      li.setAttribute("role", "option");
      li.tabIndex = -1;
      Object.assign(li.dataset, { code: s.speciesCode, common: s.commonName, sci: s.scientificName });
      names(li, { common: s.commonName, sci: s.scientificName });
      list.appendChild(li);
    });
    list.hidden = false;
    input.setAttribute("aria-expanded", "true");
  }
  function choose(li) {
    const pick = li.closest(".picker");
    const box = pick.closest("[data-kind=list], [data-kind=map]");
    add(box, { code: li.dataset.code, common: li.dataset.common, sci: li.dataset.sci });
    const input = pick.querySelector("input");
    if (box.dataset.kind === "list") { input.value = ""; input.focus(); } else input.value = "";
    close(pick);
  }
  document.addEventListener("input", (ev) => {
    const input = ev.target.closest(".picker input");
    if (!input) return;
    clearTimeout(timer);
    timer = setTimeout(() => search(input), 200);
  });
  document.addEventListener("focusin", (ev) => {
    const input = ev.target.closest(".picker[data-classes=other] input");
    if (input && !input.value) search(input);
  });
  document.addEventListener("keydown", (ev) => {
    const pick = ev.target.closest(".picker");
    if (!pick) return;
    const options = Array.from(pick.querySelectorAll("li.option"));
    const at = options.indexOf(ev.target);
    if (ev.key === "Enter") {
      ev.preventDefault(); // never submits the settings form
      // Only a highlighted match is added: the first hit of a few letters is a guess.
      if (at >= 0) choose(ev.target);
    } else if (ev.key === "ArrowDown" && options.length) {
      ev.preventDefault();
      options[Math.min(at + 1, options.length - 1)].focus();
    } else if (ev.key === "ArrowUp" && at >= 0) {
      ev.preventDefault();
      if (at === 0) pick.querySelector("input").focus(); else options[at - 1].focus();
    } else if (ev.key === "Escape") {
      close(pick);
    }
  });
  document.addEventListener("click", (ev) => {
    const option = ev.target.closest(".pick-results li.option");
    if (option) { choose(option); return; }
    const rm = ev.target.closest(".chip-remove");
    if (rm) {
      const box = rm.closest("[data-kind]");
      rm.closest("li.chip, tr[data-code]").remove();
      refreshEmpty(box);
      refreshOwls();
      return;
    }
    const owls = ev.target.closest("button.add-owls");
    if (owls) {
      add(document.querySelector(`[data-kind=list][data-key="${owls.dataset.key}"]`),
        { code: "owls", common: "Owls (every owl species)", sci: "" });
      refreshOwls();
      return;
    }
    document.querySelectorAll(".pick-results:not([hidden])").forEach((l) => {
      if (!l.closest(".picker").contains(ev.target)) close(l.closest(".picker"));
    });
  });

  // ---- Collecting and saving a settings form -------------------------------------------------
  // Team: every field as it is. Satellite: blank, "inherit" and empty lists are null (inherit).
  function collect(form) {
    const team = form.dataset.scope === "team";
    const body = {};
    form.querySelectorAll("[data-kind]").forEach((f) => {
      const key = f.dataset.key || f.name;
      const v = typeof f.value === "string" ? f.value.trim() : "";
      switch (f.dataset.kind) {
        case "num": if (v !== "") body[key] = Number(v); break;
        case "num-or-null": body[key] = v === "" ? null : Number(v); break;
        case "choice": body[key] = v === "" ? null : v; break;
        case "bool": body[key] = f.checked; break;
        case "list": {
          const codes = Array.from(f.querySelectorAll("li.chip")).map((c) => c.dataset.code);
          body[key] = codes.length || team ? codes : null;
          break;
        }
        case "map": {
          const map = {};
          f.querySelectorAll("tr[data-code]").forEach((tr) => { map[tr.dataset.code] = Number(tr.querySelector("input").value.trim()); });
          body[key] = Object.keys(map).length || team ? map : null;
          break;
        }
      }
    });
    return body;
  }
  // The control of a refused setting (the API's `field`): `key` is its input or list,
  // `key.code` one species' row of a per-species table.
  function fieldOf(form, field) {
    const [key, code] = field.split(/\.(.*)/s);
    const box = form.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (box && code) {
      const row = box.querySelector(`[data-code="${CSS.escape(code)}"]`);
      return row && row.querySelector("input");
    }
    if (box) return box.querySelector(".picker input");
    return form.querySelector(`[name="${CSS.escape(key)}"]`);
  }
  async function save(form, body) {
    const box = form.querySelector(".form-error");
    const sat = form.dataset.scope === "satellite";
    const r = sat
      ? await bh.api("PUT", "/satellites/" + encodeURIComponent(form.dataset.id) + "/config", { overrides: body })
      : await bh.api("PUT", "/settings/tenant", body);
    bh.clearFields(form);
    if (!r.ok) {
      const field = r.data && r.data.field ? fieldOf(form, r.data.field) : null;
      if (bh.markField(field, msg(r))) { if (box) box.hidden = true; return; }
      if (box) { box.textContent = msg(r); box.hidden = false; } else bh.toast(msg(r), "bad");
      return;
    }
    if (box) box.hidden = true;
    bh.reloadSaying(sat ? "Saved and sent to the satellite." : "Saved");
  }
  document.addEventListener("submit", (ev) => {
    const form = ev.target.closest("form.detection");
    if (!form) return;
    ev.preventDefault();
    if (form.dataset.edit !== "true") return;
    save(form, collect(form));
  });
  document.addEventListener("click", (ev) => {
    const clear = ev.target.closest("button.clear-override");
    if (!clear) return;
    save(clear.closest("form.detection"), { [clear.dataset.key]: null });
  });

  // ---- One species' own minimum (species page) ----------------------------------------------
  // Reads the team's current map first, so a change made elsewhere meanwhile is kept.
  async function setSpeciesMin(code, value) {
    const cur = await bh.api("GET", "/settings/tenant");
    if (!cur.ok) return cur;
    const map = Object.assign({}, cur.data.settings.species_min_confidence || {});
    if (value === null) delete map[code]; else map[code] = value;
    return bh.api("PUT", "/settings/tenant", { species_min_confidence: map });
  }
  const spCard = $("species-threshold");
  if (spCard) {
    const code = spCard.dataset.code;
    const show = (r) => {
      if (r.ok) { bh.reloadSaying("Saved"); return; }
      const box = $("sp-threshold-error");
      box.textContent = msg(r);
      box.hidden = false;
    };
    const saveButton = $("sp-threshold-save");
    if (saveButton) saveButton.addEventListener("click", async () => {
      const v = $("sp-threshold").value.trim();
      show(await setSpeciesMin(code, v === "" ? null : Number(v)));
    });
    const clear = $("sp-threshold-clear");
    if (clear) clear.addEventListener("click", async () => show(await setSpeciesMin(code, null)));
  }

  // ---- A detection's actions: raise the threshold, never record here ---------------------------
  const det = $("det-settings");
  if (!det) return;
  const d = det.dataset;
  const dialog = $("det-confirm");
  let pending = null;
  function ask(text, action) {
    $("det-confirm-text").textContent = text;
    $("det-confirm-error").hidden = true;
    $("det-settings-result").hidden = true;
    pending = action;
    dialog.showModal();
  }
  $("det-confirm-cancel").addEventListener("click", () => { pending = null; dialog.close(); });
  $("det-confirm-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!pending) return;
    const ok = $("det-confirm-ok");
    ok.disabled = true;
    const done = await pending();
    ok.disabled = false;
    if (!done.ok) { $("det-confirm-error").textContent = msg(done.r); $("det-confirm-error").hidden = false; return; }
    pending = null;
    dialog.close();
    const out = $("det-settings-result");
    out.textContent = "";
    out.appendChild(el("p", "", done.text));
    const p = el("p", "small");
    p.appendChild(document.createTextNode("To undo it, remove it under "));
    const a = el("a", "", done.where);
    a.href = done.href;
    p.appendChild(a);
    p.appendChild(document.createTextNode("."));
    out.appendChild(p);
    out.hidden = false;
    bh.toast("Saved", "ok");
  });
  // The hub refuses a "raise" that would not raise (409 not_a_raise), so a change made
  // meanwhile is never lowered; the page offers it only above what the species needs now.
  const raise = $("raise-threshold");
  if (raise) raise.addEventListener("click", () => {
    const to = raise.dataset.to, old = raise.dataset.old;
    ask(`From now on, keep ${d.name} only from a confidence of ${to}, at every satellite of the team? ` +
      `It needs ${old} now (${raise.dataset.oldWhose}).`, async () => {
      const lang = d.lang ? "?lang=" + encodeURIComponent(d.lang) : "";
      const r = await bh.api("POST", "/detection-quality/" + encodeURIComponent(d.code) + "/raise" + lang, { threshold: Number(to) });
      if (r.ok) raise.closest(".row").remove(); // done: no second offer of the same raise
      return { ok: r.ok, r, text: `Saved: ${d.name} now needs a confidence of ${to} to be kept (it needed ${old}).`,
        where: "the team's detection settings", href: "/team/detection#species_min_confidence" };
    });
  });
  const never = $("never-record");
  if (never) never.addEventListener("click", () => {
    const picked = document.querySelector("input[name=never-scope]:checked");
    const scope = picked ? picked.value : "satellite";
    if (scope === "team") {
      ask(`Never record ${d.name} again, at any satellite of the team?`, async () => {
        const cur = await bh.api("GET", "/settings/tenant");
        if (!cur.ok) return { ok: false, r: cur };
        const list = (cur.data.settings.exclude_species || []).slice();
        if (!list.includes(d.code)) list.push(d.code);
        const r = await bh.api("PUT", "/settings/tenant", { exclude_species: list });
        return { ok: r.ok, r, text: `Saved: ${d.name} is no longer recorded by any satellite of the team.`,
          where: "the team's detection settings", href: "/team/detection#exclude_species" };
      });
    } else {
      const base = "/satellites/" + encodeURIComponent(d.sat) + "/config";
      ask(`Never record ${d.name} again at ${d.satName}? The team's other satellites still record it.`, async () => {
        const cur = await bh.api("GET", base);
        if (!cur.ok) return { ok: false, r: cur };
        const list = ((cur.data.overrides || {}).exclude_species || []).slice();
        if (!list.includes(d.code)) list.push(d.code);
        const r = await bh.api("PUT", base, { overrides: { exclude_species: list } });
        return { ok: r.ok, r, text: `Saved: ${d.name} is no longer recorded at ${d.satName}.`,
          where: d.satName + "'s detection settings", href: "/satellites/" + encodeURIComponent(d.sat) + "#detection" };
      });
    }
  });
})();
