#!/usr/bin/env bash
# `mad --ibsim exporter` before and after, side by side in one run on one
# ibsim fabric that `mad --ibsim sm --once` brought up: for each binary it
# starts the exporter, waits for its second sweep line on stderr, then
# times /metrics with curl: identity; Prometheus-like (Accept-Encoding:
# gzip with Prometheus' Accept header), the first such scrape and one
# after the next sweep; and the same for the new binary with --lean;
# counting bytes on the
# wire, seconds, series (lines not starting with '#'), and reading RSS,
# peak RSS and threads from /proc.
#
# usage: scripts/bench-exporter-ibsim.sh NETFILE BEFORE_MAD AFTER_MAD
#   NETFILE: an ibsim net file, e.g. the 13,284-node fat tree from
#     gen_fattree.py 3level --radix 36 --pods 36 (with its
#     "# ibsim needs: -N .. -S .. -P .." line);
#   BEFORE_MAD / AFTER_MAD: two release builds of `mad`, e.g. of 40f77ee
#     (tiny_http) and of the current tree:
#     git worktree add /tmp/before 40f77ee && (cd /tmp/before &&
#       cargo build --release -p mad-tools)
set -euo pipefail
net=${1:?usage: $0 NETFILE BEFORE_MAD AFTER_MAD}
before=$(realpath "${2:?before binary}")
after=$(realpath "${3:?after binary}")
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=scripts/lib/ibsim.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/ibsim.sh"
name=expbench$$
start_ibsim "$name" "$net" "$work"
pids+=("$ibsim_pid")
export IBSIM_SOCKNAME=$name
echo "bringing the fabric up: $after --ibsim sm --once"
"$after" --ibsim sm --once -f "$work/sm.log" >/dev/null
grep -q "SUBNET UP" "$work/sm.log" || { echo "mad sm did not reach SUBNET UP" >&2; tail "$work/sm.log" >&2; exit 1; }

accept='application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
port=19683
row() { printf '| %-22s | %-9s | %14s | %8s | %10s | %9s | %9s | %7s |\n' "$@"; }
row binary kind "bytes on wire" seconds series "RSS MB" "HWM MB" threads
row ---------------------- --------- -------------- -------- ---------- --------- --------- -------

# measure LABEL BINARY [EXTRA ARGS...]
measure() {
    local label=$1 bin=$2
    shift 2
    port=$((port + 1))
    "$bin" --ibsim exporter --listen "127.0.0.1:$port" --interval 15 -v "$@" \
        >"$work/exp.out" 2>"$work/exp.err" &
    local pid=$!
    pids+=("$pid")
    for _ in $(seq 1800); do
        [ "$(grep -c 'swept' "$work/exp.err")" -ge 2 ] && break
        kill -0 "$pid" 2>/dev/null || { echo "$label exited: $(cat "$work/exp.err")" >&2; return 1; }
        sleep 0.1
    done
    local url="http://127.0.0.1:$port/metrics"
    for kind in identity gzip next-gzip; do
        local out="$work/body.$kind"
        local r
        if [ "$kind" = next-gzip ]; then
            # Prometheus' steady state: a scrape after the next sweep
            # (the exporter encodes the formats scraped before, ahead).
            local n
            n=$(grep -c 'swept' "$work/exp.err")
            for _ in $(seq 600); do
                [ "$(grep -c 'swept' "$work/exp.err")" -gt "$n" ] && break
                sleep 0.1
            done
            sleep 1
        fi
        if [ "$kind" = identity ]; then
            r=$(curl -s -o "$out" -w '%{size_download} %{time_total}' "$url")
        else
            r=$(curl -s -o "$out" -H "Accept: $accept" -H 'Accept-Encoding: gzip' \
                -w '%{size_download} %{time_total}' "$url")
        fi
        local series
        if [ "$kind" = identity ]; then
            series=$(grep -vc '^#' "$out" || true)
        elif gzip -t "$out" 2>/dev/null; then
            series=$(gzip -dc "$out" | grep -vc '^#' || true)
        else
            series=$(grep -vc '^#' "$out" || true)
        fi
        local rss hwm thr
        rss=$(awk '/^VmRSS/ {printf "%.0f", $2/1024}' "/proc/$pid/status")
        hwm=$(awk '/^VmHWM/ {printf "%.0f", $2/1024}' "/proc/$pid/status")
        thr=$(awk '/^Threads/ {print $2}' "/proc/$pid/status")
        # shellcheck disable=SC2086
        row "$label" "$kind" $r "$series" "$rss" "$hwm" "$thr"
    done
    grep 'swept' "$work/exp.err" | tail -1 | sed "s/^/  $label: /"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
}

measure "before" "$before"
measure "after" "$after"
measure "after --lean" "$after" --lean
