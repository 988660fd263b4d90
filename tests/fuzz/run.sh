#!/usr/bin/env bash
# tests/fuzz/run.sh — build the libFuzzer targets with clang (libFuzzer +
# AddressSanitizer + UndefinedBehaviorSanitizer) and run each for a bounded
# time from its committed seed corpus. Exits non-zero when a target finds a
# crash, a leak, a sanitizer report or a broken property.
#
#   SLOT_FUZZ_SECONDS   run time per target (default 60)
#   SLOT_FUZZ_OUT       build and work folder (default build-fuzz)
#   SLOTD               the slotd fuzz_conn talks to; default: one built here
#                       with clang and the same sanitizers
#   tests/fuzz/run.sh [target...]   (default: every target)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$root/tests/fuzz
out=${SLOT_FUZZ_OUT:-$root/build-fuzz}
secs=${SLOT_FUZZ_SECONDS:-60}
cc=${CLANG:-clang}
mkdir -p "$out"

# The library without the daemon (server.c, slotd.c hold main and the loop).
lib_srcs=()
for f in "$root"/src/*.c; do
    case "$(basename "$f")" in server.c | slotd.c) ;; *) lib_srcs+=("$f") ;; esac
done
cflags=(-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
        -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-field-initializers
        -I"$root/include" -I"$root/src")
read -r -a deps <<<"$(pkg-config --cflags --libs lmdb jansson) -lpthread -lm"

build_target() {
    echo "fuzz: building $1" >&2
    "$cc" "${cflags[@]}" "$here/$1.c" "${lib_srcs[@]}" "${deps[@]}" -o "$out/$1"
}

# fuzz_conn needs a running slotd; a sanitizer build so its bugs show.
ensure_slotd() {
    if [ -n "${SLOTD:-}" ]; then
        return
    fi
    local b=$out/slotd-build
    if [ ! -f "$b/build.ninja" ]; then
        CC=$cc meson setup "$b" "$root" -Db_sanitize=address,undefined -Db_lundef=false >&2
    fi
    ninja -C "$b" slotd >&2
    export SLOTD=$b/slotd
}

# Runs one target for $secs seconds; prints its execution count.
run_target() {
    local name=$1 corpus=$2
    local work=$out/work_$corpus log=$out/$name.log status=0
    mkdir -p "$work"
    "$out/$name" -max_total_time="$secs" -print_final_stats=1 -max_len=8192 -timeout=20 \
        -dict="$here/slot.dict" -artifact_prefix="$out/$name-" "$work" "$here/$corpus" >"$log" 2>&1 || status=$?
    local execs rate
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    if [ "$status" -ne 0 ]; then
        echo "fuzz: $name FAILED (exit $status); the end of its log ($log):"
        tail -n 60 "$log"
        return 1
    fi
    echo "fuzz: $name: ${execs:-?} executions in $secs s (${rate:-?}/s), corpus $(ls "$work" | wc -l) inputs"
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
if command -v llvm-symbolizer >/dev/null; then
    export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer)}
fi

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_proto fuzz_conn)
failed=0
for t in "${targets[@]}"; do
    build_target "$t"
    [ "$t" = fuzz_conn ] && ensure_slotd
    run_target "$t" "corpus_${t#fuzz_}" || failed=1
done
exit $failed
