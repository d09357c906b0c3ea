// Loaded first, without `defer`, on every page: keeps each script error, failed load and
// Content-Security-Policy violation in window.__bhErrors, so a person (or a browser test) can
// see what went wrong on a page.
"use strict";
(function () {
  const errors = (window.__bhErrors = []);
  addEventListener("error", (e) => {
    const t = e.target;
    errors.push(t && t !== window && (t.src || t.href) ? "failed to load " + (t.src || t.href) : String(e.message));
  }, true);
  addEventListener("unhandledrejection", (e) => { errors.push("unhandled: " + String(e.reason)); });
  document.addEventListener("securitypolicyviolation", (e) => {
    const where = e.sourceFile ? " at " + e.sourceFile + ":" + e.lineNumber : "";
    errors.push("blocked by the content security policy: " + e.effectiveDirective + " " + (e.blockedURI || "inline") + where);
  });
  const ce = console.error;
  console.error = function () {
    errors.push("console.error: " + [].map.call(arguments, String).join(" "));
    return ce.apply(console, arguments);
  };
})();
