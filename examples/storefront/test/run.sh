#!/usr/bin/env bash
# examples/storefront/test/run.sh [SLOTD] — the storefront's browser test (meson test
# 'storefront', suite 'clients'): checks that what it needs is here, else exits 77 (skipped)
# saying what is missing, then runs test/browser.test.js with node's test runner.
# SLOTD: the slotd binary (argument, or $SLOTD); CHROMIUM: the browser (default
# /usr/bin/chromium, Debian's chromium); SLOT_ARTIFACTS: where the screenshots go.
set -u
src=${BASH_SOURCE[0]}
[[ $src == */* ]] || src=./$src
here=$(cd "${src%/*}/.." && pwd)
skip() {
    echo "storefront: skipped: $*"
    exit 77
}
export SLOTD=${1:-${SLOTD:-}}
[ -n "$SLOTD" ] && [ -x "$SLOTD" ] || { echo "storefront: no slotd binary (argument or \$SLOTD)"; exit 1; }
[[ $SLOTD == /* ]] || SLOTD=$PWD/$SLOTD
command -v node >/dev/null || skip "node is not installed (Debian: apt-get install nodejs npm; tools/test.sh does)"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
    skip "node $(node --version) is older than 20, which playwright-core needs"
export CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || skip "no chromium at $CHROMIUM (Debian: apt-get install chromium; tools/test.sh does)"
[ -f "$here/node_modules/playwright-core/package.json" ] ||
    skip "playwright-core is not installed: run 'npm ci --ignore-scripts --no-audit --no-fund' in examples/storefront (tools/test.sh does)"
[ -f "$here/../../clients/node/src/index.js" ] || { echo "storefront: the Node client clients/node/src/index.js is missing"; exit 1; }
exec node --test-reporter=spec "$here/test/browser.test.js"
