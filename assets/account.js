// My account: turning two-factor sign-in on. The first code is sent from here, not by app.js's
// generic forms, because the answer changes the card: the QR code, the key and "Turn on" go, the
// card says two-factor sign-in is on, and what is left to do stays: saving the backup codes
// (shown once).
"use strict";
(function () {
  const bh = window.bh;
  const $ = (id) => document.getElementById(id);

  // A refused first code in the set-up's own words: there are no backup codes to fall back on yet.
  const REFUSED = {
    invalid_mfa_code: "That code is not right. Check that your phone's clock is right, then type the code the app shows now.",
    invalid_code_format: "Type the 6 digits your authenticator app shows for birdhub.",
    no_pending_enrolment: "The set-up waited more than 10 minutes. Press \u201cSet up an authenticator app\u201d again and scan the new code.",
    mfa_already_enabled: "Two-factor sign-in is already on. Reload the page to see it.",
  };
  const sentence = (m) => (m ? m.charAt(0).toUpperCase() + m.slice(1) : "That did not work. Try again.");

  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest("#totp-confirm");
    if (!form) return;
    ev.preventDefault();
    const error = form.querySelector(".form-error");
    const field = form.elements.code;
    // Called before any await, so the form sends once (app.js keeps its buttons off meanwhile).
    const r = await bh.api("POST", "/auth/mfa/totp/confirm", { code: field.value });
    if (!r.ok) {
      const d = r.data || {};
      error.textContent = REFUSED[d.code] || sentence(d.message);
      error.hidden = false;
      field.select();
      return;
    }
    error.hidden = true;
    $("mfa-setup").hidden = true;
    $("backup-codes").textContent = ((r.data && r.data.backupCodes) || []).join("\n");
    $("codes").hidden = false;
    const on = $("mfa-now-on");
    on.hidden = false;
    on.focus();
  });
})();
