#!/usr/bin/env bash
# Runs every fuzz target for RUNS inputs (default 1,000,000) with libFuzzer and prints one
# line per target: inputs run, seconds, corpus size, findings. Needs the nightly toolchain and
# cargo-fuzz (`make fuzz` installs it). Findings land in fuzz/artifacts/<target>/.
#
# A finding is a panic, and also an input that takes more than TIMEOUT seconds or makes a
# single allocation above MALLOC_MB or the process's memory above RSS_MB: every parser must be
# linear in its input and bounded, so superlinear time or memory counts as a bug. JSON bodies
# are fuzzed up to 64 KiB (a quadratic pass over that takes seconds; over 4 KiB it would hide).
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-1000000}
TIMEOUT=${TIMEOUT:-1}
RSS_MB=${RSS_MB:-1024}
MALLOC_MB=${MALLOC_MB:-256}
TARGETS=${TARGETS:-"frame header_json header_binary batch properties record_recovery consume_queue_load consume_queue_ext_load index_file_load acl json_body sql_filter topic_attributes epoch_cache ha_autoswitch controller_store"}
cargo +nightly fuzz build --sanitizer none >/dev/null
status=0
for t in $TARGETS; do
    work="target/corpus/$t"
    mkdir -p "$work" "corpus/$t"
    start=$(date +%s)
    log="target/fuzz-$t.log"
    max_len=4096
    [ "$t" = json_body ] && max_len=65536
    if cargo +nightly fuzz run --sanitizer none "$t" "$work" "corpus/$t" -- \
        -runs="$RUNS" -max_len="$max_len" -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" \
        -malloc_limit_mb="$MALLOC_MB" -print_final_stats=1 >"$log" 2>&1; then
        result="0 findings"
    else
        result="CRASH (see $log and artifacts/$t/)"
        status=1
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    echo "$t: $execs inputs in $(( $(date +%s) - start )) s, corpus $(ls "$work" | wc -l), $result"
done
exit $status
