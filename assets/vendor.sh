#!/usr/bin/env bash
# Fetches the dashboard's third-party JavaScript and CSS from the npm registry, once, at pinned
# versions, into assets/vendor/ with their licence files. The files are committed and embedded in
# the binary: nothing is fetched at build time or at run time. Rerun after changing a version.
set -euo pipefail
cd "$(dirname "$0")"
HTMX=2.0.11
UPLOT=1.6.32

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "htmx.org@$HTMX" "uplot@$UPLOT" >/dev/null)
tar -xzf "$work/htmx.org-$HTMX.tgz" -C "$work" && mv "$work/package" "$work/htmx"
tar -xzf "$work/uplot-$UPLOT.tgz" -C "$work" && mv "$work/package" "$work/uplot"

mkdir -p vendor
cp "$work/htmx/dist/htmx.min.js" vendor/htmx.min.js
cp "$work/htmx/LICENSE" vendor/htmx.LICENSE
cp "$work/uplot/dist/uPlot.iife.min.js" vendor/uPlot.min.js
cp "$work/uplot/dist/uPlot.min.css" vendor/uPlot.min.css
cp "$work/uplot/LICENSE" vendor/uPlot.LICENSE
printf 'htmx.org %s\nuplot %s\n' "$HTMX" "$UPLOT" > vendor/VERSIONS
echo "vendored htmx $HTMX and uPlot $UPLOT into $(pwd)/vendor"
