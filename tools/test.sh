#!/usr/bin/env bash
# tools/test.sh — the test command: install what is missing, configure, build,
# run every test (meson test). Exits non-zero when anything fails.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

slot_need_packages
slot_build
meson test -C "$SLOT_BUILD" --print-errorlogs "$@"
