#!/usr/bin/env bash
# tools/test.sh — the test command: install what is missing, configure, build,
# run every test (meson test). Exits non-zero when anything fails.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

# redis-server and hiredis: the bench's Redis peer (tests/test_bench.c runs it);
# etcd-server: the configuration store tests/test_etcd.c starts.
# scdoc renders the man pages, mandoc lints them (tests/test_man.py);
# systemd: systemd-analyze checks slotd.service (tests/test_systemd.py);
# prometheus: promtool checks the metrics and examples/prometheus (tests/test_metrics.c);
# haproxy: sends HTTP to the primary of a replica set (tests/test_haproxy.sh);
# strace: traces slotd's folder fsyncs (tests/test_fsync.c);
# nftables: the partition tests cut links between network namespaces (tests/netns_fixture.c);
# nodejs, npm: the Node client (clients/node, tests/test_node_client.sh), its devDependencies
# from its package-lock.json (npm ci, slot_npm_ci in tools/setup.sh). Asked for only when the
# command is missing: a nodejs of another origin (NodeSource's) brings its own npm, and
# Debian's npm package would conflict with it.
# chromium: the storefront's browser test drives it headless (examples/storefront/test), with
# playwright-core from examples/storefront/package-lock.json (npm ci).
node_pkgs=()
command -v node >/dev/null 2>&1 || node_pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || node_pkgs+=(npm)
slot_need_packages redis-server redis-tools libhiredis-dev etcd-server libcurl4-openssl-dev scdoc mandoc systemd prometheus haproxy strace nftables ${node_pkgs[@]+"${node_pkgs[@]}"} chromium
slot_npm_ci "$SLOT_ROOT/clients/node"
# python3-venv, -setuptools, -wheel: pip installs clients/python offline (clients/python/tests/test_install.py).
slot_need_packages python3-venv python3-setuptools python3-wheel
slot_npm_ci "$SLOT_ROOT/examples/storefront"
slot_build
meson test -C "$SLOT_BUILD" --print-errorlogs "$@"
