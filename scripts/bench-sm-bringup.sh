#!/usr/bin/env bash
# SUBNET UP of one fabric over ibsim, `mad --ibsim sm --once` against
# OpenSM 3.3 (`opensm --once` under libumad2sim), side by side in one run,
# each on a fresh ibsim of the same topology, with /usr/bin/time -v's
# wall time and peak RSS. OpenSM's time to SUBNET UP is read from the
# time stamps of its own log (first line to the "SUBNET UP" line); mad
# sm's from its own log the same way.
#
# usage: scripts/bench-sm-bringup.sh NETFILE [MAD_BINARY]
# (MAD_BINARY default: target/release/mad; build it with
#  cargo build --release -p mad-tools)
set -euo pipefail
net=${1:?usage: $0 NETFILE [MAD_BINARY]}
mad=$(realpath "${2:-target/release/mad}")
umad2sim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
work=$(mktemp -d)
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT

# shellcheck source=scripts/lib/ibsim.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/ibsim.sh"

# The seconds between the first log line and the SUBNET UP line of an
# OpenSM-style log ("Mon DD HH:MM:SS.micro" or "Mon DD HH:MM:SS micro").
up_seconds() {
    python3 - "$1" <<'PY'
import re, sys
t = open(sys.argv[1], errors="replace").read().splitlines()
def ts(l):
    m = re.match(r"\w{3} +\d+ (\d+):(\d+):(\d+)[. ](\d{6})", l)
    return None if not m else int(m[1])*3600 + int(m[2])*60 + int(m[3]) + int(m[4])/1e6
first = next(ts(l) for l in t if ts(l) is not None)
up = next((ts(l) for l in t if "SUBNET UP" in l and ts(l) is not None), None)
print("not reached" if up is None else f"{up - first:.3f}")
PY
}

rss() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1"; }
wall() { sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$1"; }

name=smbench$$a
start_ibsim "$name" "$net" "$work"
IBSIM_SOCKNAME=$name /usr/bin/time -v -o "$work/mad.time" \
    "$mad" --ibsim sm --once -f "$work/mad.log" || true
kill "$ibsim_pid"; wait "$ibsim_pid" 2>/dev/null || true

name=smbench$$b
start_ibsim "$name" "$net" "$work"
printf 'force_log_flush TRUE\n' >"$work/osm.conf"
(cd "$work" && OSM_TMP_DIR=$work OSM_CACHE_DIR=$work IBSIM_SOCKNAME=$name LD_PRELOAD=$umad2sim \
    /usr/bin/time -v -o "$work/osm.time" /usr/sbin/opensm --once -F "$work/osm.conf" \
    -f "$work/osm.log" >"$work/osm.out" 2>&1) || true
kill "$ibsim_pid"; wait "$ibsim_pid" 2>/dev/null || true

printf '%-28s %18s %14s %14s\n' "$(basename "$net")" "to SUBNET UP (s)" "wall" "peak RSS (KB)"
printf '%-28s %18s %14s %14s\n' "mad --ibsim sm --once" "$(up_seconds "$work/mad.log")" "$(wall "$work/mad.time")" "$(rss "$work/mad.time")"
printf '%-28s %18s %14s %14s\n' "opensm --once" "$(up_seconds "$work/osm.log")" "$(wall "$work/osm.time")" "$(rss "$work/osm.time")"
