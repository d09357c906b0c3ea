// Sign-in's second step with a passkey (WebAuthn), through /api/auth/login/mfa/passkey/*.
"use strict";
(function () {
  const btn = document.getElementById("passkey-signin");
  if (!btn) return;
  const err = document.getElementById("passkey-error");
  const b64u = {
    dec: (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(s.length / 4) * 4, "=")), (c) => c.charCodeAt(0)),
    enc: (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""),
  };
  function fail(message) {
    err.textContent = message;
    err.hidden = false;
  }
  btn.addEventListener("click", async () => {
    if (!window.PublicKeyCredential) return fail("This browser cannot use passkeys here (it needs https or localhost).");
    const token = btn.dataset.mfaToken;
    const begin = await window.bh.api("POST", "/auth/login/mfa/passkey/begin", { mfaToken: token });
    if (!begin.ok) return fail(begin.data && begin.data.message || "Passkey sign-in is not available.");
    const opts = begin.data.publicKey || (begin.data.options && begin.data.options.publicKey) || begin.data;
    opts.challenge = b64u.dec(opts.challenge);
    (opts.allowCredentials || []).forEach((c) => { c.id = b64u.dec(c.id); });
    let cred;
    try { cred = await navigator.credentials.get({ publicKey: opts }); } catch (e) { return fail("The passkey was not used."); }
    const r = cred.response;
    const credential = {
      id: cred.id, rawId: b64u.enc(cred.rawId), type: cred.type, extensions: {},
      response: {
        authenticatorData: b64u.enc(r.authenticatorData), clientDataJSON: b64u.enc(r.clientDataJSON),
        signature: b64u.enc(r.signature), userHandle: r.userHandle ? b64u.enc(r.userHandle) : null,
      },
    };
    const remember = document.querySelector('input[name="remember"]');
    const finish = await window.bh.api("POST", "/auth/login/mfa/passkey/finish", {
      mfaToken: token, response: credential, rememberDevice: !!(remember && remember.checked),
    });
    if (!finish.ok) return fail(finish.data && finish.data.message || "The passkey was not accepted.");
    // The page only ever sets a local path; follow nothing else (no "//host", "/\\host", tabs).
    const next = btn.dataset.next || "/";
    location.assign(/^\/(?![\/\\])[^\\\s\u0000-\u001f\u007f]*$/.test(next) ? next : "/");
  });
})();
