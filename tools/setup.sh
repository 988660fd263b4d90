#!/usr/bin/env bash
# tools/setup.sh — install what slotd needs to build (Debian packages), then
# configure and build it with meson. Sourced by tools/demo.sh and tools/test.sh;
# also runnable alone. Idempotent: installs only what is missing.
set -euo pipefail

SLOT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SLOT_BUILD=${SLOT_BUILD:-$SLOT_ROOT/build}

slot_need_packages() {
    local pkgs=(meson ninja-build pkg-config gcc liblmdb-dev libuv1-dev libjansson-dev libcurl4-openssl-dev uthash-dev zlib1g-dev libssl-dev libsystemd-dev libmicrohttpd-dev python3 "$@")
    local missing=()
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "setup: installing ${missing[*]}" >&2
    $sudo apt-get update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
}

# slot_npm_ci DIR — the npm packages DIR's package-lock.json pins (clients/node: typescript,
# a devDependency), with `npm ci --ignore-scripts --no-audit --no-fund`; skipped when DIR's
# node_modules was made from this very lock file (a copy kept as node_modules/.slot-lock).
# Without npm, or when the registry cannot be reached, it warns and returns 0: the tests that
# need the packages then report themselves skipped.
slot_npm_ci() {
    local dir=$1
    command -v npm >/dev/null 2>&1 || { echo "setup: npm is missing; not installing $dir's packages" >&2; return 0; }
    if [ -f "$dir/node_modules/.slot-lock" ] && cmp -s "$dir/package-lock.json" "$dir/node_modules/.slot-lock"; then
        return 0
    fi
    echo "setup: npm ci in $dir" >&2
    if (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund >&2); then
        cp "$dir/package-lock.json" "$dir/node_modules/.slot-lock"
    else
        echo "setup: npm ci in $dir failed; its tests that need those packages will skip" >&2
    fi
}

# slot_build [MESON OPTIONS...] — configure $SLOT_BUILD (once) and build it.
# SLOT_MESON_ARGS: more meson options, split on blanks, appended to the
# setup's and applied to a build folder that exists already (meson
# configure); .ci/run sets SLOT_MESON_ARGS=-Dwerror=true so that CI's builds
# fail on a warning, while a plain build (any compiler, any buildtype) only
# warns.
slot_build() {
    local extra=()
    read -r -a extra <<<"${SLOT_MESON_ARGS:-}"
    if [ ! -f "$SLOT_BUILD/build.ninja" ]; then
        meson setup "$SLOT_BUILD" "$SLOT_ROOT" "$@" ${extra[@]+"${extra[@]}"} >&2
    elif [ ${#extra[@]} -gt 0 ]; then
        meson configure "$SLOT_BUILD" "${extra[@]}" >&2
    fi
    ninja -C "$SLOT_BUILD" >&2
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    slot_need_packages
    slot_build
fi
