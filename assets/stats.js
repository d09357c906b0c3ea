// Stats: changing the range or the satellite reloads the page with the choice in the URL, so the
// view can be bookmarked and shared; the button stays for keyboards and browsers without scripts.
"use strict";
(function () {
  document.querySelectorAll("form.stats-filter").forEach((form) => {
    form.querySelectorAll("select").forEach((s) => s.addEventListener("change", () => form.requestSubmit()));
  });
})();
