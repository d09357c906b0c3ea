// Species catalogue: the search box filters the cards as you type (the server filters the same
// way for `?q=` without scripts) and keeps the words in the URL.
"use strict";
(function () {
  const input = document.getElementById("species-q");
  const list = document.getElementById("species-list");
  const none = document.getElementById("species-none");
  if (!input || !list) return;
  const cards = Array.from(list.querySelectorAll("[data-search]"));
  function apply() {
    const q = input.value.trim().toLowerCase();
    let shown = 0;
    cards.forEach((c) => {
      const hit = !q || c.dataset.search.indexOf(q) !== -1;
      c.hidden = !hit;
      if (hit) shown++;
    });
    if (none) none.hidden = shown > 0;
    const url = new URL(window.location.href);
    if (q) url.searchParams.set("q", q); else url.searchParams.delete("q");
    window.history.replaceState(null, "", url);
  }
  // "change" and "search" too: clearing the box (its × button, or a script) fires no "input".
  ["input", "change", "search"].forEach((ev) => input.addEventListener(ev, apply));
  input.form.addEventListener("submit", (e) => { e.preventDefault(); apply(); });
})();
