#!/usr/bin/env bash
# Runs every fuzz target for RUNS inputs (default 1,000,000) with libFuzzer and prints one
# line per target: inputs run, seconds, corpus size, crashes. Needs the nightly toolchain and
# cargo-fuzz (`make fuzz` installs it). Crashing inputs land in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-1000000}
TARGETS=${TARGETS:-"frame header_json header_binary batch properties record_recovery consume_queue_load index_file_load acl"}
cargo +nightly fuzz build --sanitizer none >/dev/null
status=0
for t in $TARGETS; do
    work="target/corpus/$t"
    mkdir -p "$work" "corpus/$t"
    start=$(date +%s)
    log="target/fuzz-$t.log"
    if cargo +nightly fuzz run --sanitizer none "$t" "$work" "corpus/$t" -- \
        -runs="$RUNS" -max_len=4096 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
        result="0 crashes"
    else
        result="CRASH (see $log and artifacts/$t/)"
        status=1
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    echo "$t: $execs inputs in $(( $(date +%s) - start )) s, corpus $(ls "$work" | wc -l), $result"
done
exit $status
