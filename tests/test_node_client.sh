#!/usr/bin/env bash
# tests/test_node_client.sh SOURCE_ROOT — the Node client's tests (clients/node/test/*.test.js,
# `node --test`) against this build's slotd ($SLOTD, set by tests/meson.build). Exits 77
# (skipped) with the reason when node (>= 18) or npm is missing. tsc's check needs
# clients/node/node_modules from `npm ci` (tools/test.sh runs it); without it that one test
# reports itself skipped.
set -euo pipefail
root=${1:?usage: test_node_client.sh SOURCE_ROOT}
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node is not installed (Debian package nodejs; tools/test.sh installs it)"
    exit 77
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "SKIP: npm is not installed (Debian package npm; tools/test.sh installs it)"
    exit 77
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
    echo "SKIP: node $(node --version) is older than 18, which slotd-client needs"
    exit 77
fi
cd "$root/clients/node"
if [ ! -d node_modules/typescript ]; then
    echo "note: clients/node/node_modules is missing (run: npm ci --ignore-scripts --no-audit --no-fund in clients/node); the tsc test will skip"
fi
exec node --test --test-reporter=spec test/*.test.js
