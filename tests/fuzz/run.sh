#!/usr/bin/env bash
# tests/fuzz/run.sh — run the libFuzzer targets (libFuzzer + AddressSanitizer
# + UndefinedBehaviorSanitizer), each for a bounded time from its committed
# seed corpus. meson builds them (-Dfuzz=true, tests/fuzz/meson.build): this
# script configures a clang build folder with that option when there is none,
# builds it, and runs. Exits non-zero when a target finds a crash, a leak, a
# sanitizer report or a broken property, or does not build.
#
#   SLOT_FUZZ_SECONDS   run time per target (default 60)
#   SLOT_FUZZ_OUT       build and work folder (default build-fuzz)
#   SLOTD               the slotd fuzz_conn talks to; default: the build
#                       folder's own (built with the same sanitizers)
#   tests/fuzz/run.sh [target...]   (default: every target: fuzz_proto,
#       fuzz_proto_fast, fuzz_conn, fuzz_repl, fuzz_rlog, fuzz_backup, fuzz_http_line,
#       fuzz_etcd, fuzz_config; each with tests/fuzz/NAME.dict, or slot.dict,
#       and its corpus tests/fuzz/corpus_NAME, NAME without fuzz_)
#
# Its last line is "fuzz: N passed, M failed" (a target passes when it ran its
# time without a finding); .ci/run counts from it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$root/tests/fuzz
out=${SLOT_FUZZ_OUT:-$root/build-fuzz}
secs=${SLOT_FUZZ_SECONDS:-60}

targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_proto fuzz_proto_fast fuzz_conn fuzz_repl fuzz_rlog fuzz_backup fuzz_http_line fuzz_etcd fuzz_config)
for t in "${targets[@]}"; do
    [ -f "$here/$t.c" ] || { echo "fuzz: no target $t" >&2; exit 2; }
done

# The build: clang, the sanitizers, the fuzz targets (tests/fuzz/meson.build).
opts=(-Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false)
if [ ! -f "$out/build.ninja" ]; then
    CC=${CLANG:-clang} meson setup "$out" "$root" "${opts[@]}" >&2
elif ! meson introspect --buildoptions "$out" |
        python3 -c 'import json, sys; sys.exit(not any(o["name"] == "fuzz" and o["value"] for o in json.load(sys.stdin)))'; then
    meson configure "$out" "${opts[@]}" >&2
fi
echo "fuzz: building ${targets[*]} and slotd in $out" >&2
if ! ninja -C "$out" fuzz >&2; then
    echo "fuzz: 0 passed, ${#targets[@]} failed (the build failed)"
    exit 1
fi
export SLOTD=${SLOTD:-$out/slotd}

# The dictionary of a target: tests/fuzz/NAME.dict (NAME without fuzz_)
# when there is one, else the wire protocol's slot.dict.
dict_of() {
    local d=$here/${1#fuzz_}.dict
    [ -f "$d" ] || d=$here/slot.dict
    echo "$d"
}

# The longest input of a target: a backup file holds an LMDB copy (a few
# 4 KiB pages) after its header; every other input is a line, a file of
# settings, a few frames or segments, well within 8 KiB.
max_len_of() {
    case $1 in
    fuzz_backup) echo 65536 ;;
    *) echo 8192 ;;
    esac
}

# Runs one target for $secs seconds; prints its execution count.
run_target() {
    local name=$1 corpus=$2
    local work=$out/work_$corpus log=$out/$name.log status=0
    mkdir -p "$work"
    "$out/tests/fuzz/$name" -max_total_time="$secs" -print_final_stats=1 -max_len="$(max_len_of "$name")" -timeout=20 \
        -dict="$(dict_of "$name")" -artifact_prefix="$out/$name-" "$work" "$here/$corpus" >"$log" 2>&1 || status=$?
    local execs rate cov
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)
    if [ "$status" -ne 0 ]; then
        echo "fuzz: $name FAILED (exit $status); the end of its log ($log):"
        tail -n 60 "$log"
        return 1
    fi
    echo "fuzz: $name: ${execs:-?} executions in $secs s (${rate:-?}/s), ${cov:-cov: ?}, corpus $(ls "$work" | wc -l) inputs"
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
if command -v llvm-symbolizer >/dev/null; then
    export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer)}
fi

passed=0
failed=0
for t in "${targets[@]}"; do
    if run_target "$t" "corpus_${t#fuzz_}"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
