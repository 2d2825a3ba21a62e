#!/usr/bin/env bash
# Route balance of fat-tree routing over ibsim: `mad --ibsim sm --once -R
# ftree` against OpenSM 3.3 (`opensm --once` with `routing_engine ftree`,
# under libumad2sim), each on a fresh ibsim of the same topology, both
# read back by `mad --ibsim check-routes --json` (the switches' LFTs as
# programmed). Prints, per SM: which engine its log says routed, whether
# the channel dependency graph has a cycle, the unreachable pairs, and
# min / max over the spine ports (every port of a switch without CAs) and
# over the leaves' uplinks (the switch ports of switches with CAs) of the
# CA LIDs the LFT sends out of the port (what check_lft_balance counts)
# and of the (source CA, destination LID) pairs whose route leaves by it
# (the port's share of uniform all-to-all traffic).
#
# usage: [LMC=N] scripts/bench-ftree-balance.sh NETFILE [MAD_BINARY]
# (MAD_BINARY default: target/release/mad; build it with
#  cargo build --release -p mad-tools). LMC=N runs both SMs with LMC N
# (`mad sm -l N`, opensm.conf `lmc N`): every LID of a range is counted.
set -euo pipefail
net=${1:?usage: $0 NETFILE [MAD_BINARY]}
mad=$(realpath "${2:-target/release/mad}")
umad2sim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck source=scripts/lib/ibsim.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/ibsim.sh"

# One row of the table from check-routes' JSON.
row() {
    jq -r --arg who "$1" --arg engine "$2" '
      def range(f): [.per_switch[] | f] | flatten | if length == 0 then "-" else "\(min) / \(max)" end;
      def spine(k): select(all(.ports[]; .to == "switch")) | [.ports[] | .[k]];
      def uplinks(k): select(any(.ports[]; .to == "ca")) | [.ports[] | select(.to == "switch") | .[k]];
      [$who, $engine, (if .deadlock_free then "none" else "CYCLE" end), (.unreachable | tostring),
       range(spine("routes")), range(uplinks("routes")), range(spine("pairs")), range(uplinks("pairs"))]
      | @tsv' "$3"
}

name=ftbal$$a
start_ibsim "$name" "$net" "$work"
lmc=${LMC:-0}
IBSIM_SOCKNAME=$name "$mad" --ibsim sm --once -R ftree -l "$lmc" -f "$work/mad.log" || true
IBSIM_SOCKNAME=$name "$mad" --ibsim check-routes --json >"$work/mad.json" || true
kill "$ibsim_pid"; wait "$ibsim_pid" 2>/dev/null || true
mad_engine=$(sed -n 's/.*routing engine \([a-z]*\) routed the fabric.*/\1/p' "$work/mad.log" | tail -1)

name=ftbal$$b
start_ibsim "$name" "$net" "$work"
printf 'force_log_flush TRUE\nrouting_engine ftree\nlmc %s\n' "$lmc" >"$work/osm.conf"
(cd "$work" && OSM_TMP_DIR=$work OSM_CACHE_DIR=$work IBSIM_SOCKNAME=$name LD_PRELOAD=$umad2sim \
    /usr/sbin/opensm --once -F "$work/osm.conf" -f "$work/osm.log" >"$work/osm.out" 2>&1) || true
IBSIM_SOCKNAME=$name "$mad" --ibsim check-routes --json >"$work/osm.json" || true
kill "$ibsim_pid"; wait "$ibsim_pid" 2>/dev/null || true
osm_engine=$(sed -n 's/.*osm_ucast_mgr_process: \([a-z]*\) tables configured.*/\1/p' "$work/osm.log" | tail -1)

{
    printf 'SM\tengine\tcycle\tunreachable\tLIDs/spine port\tLIDs/leaf uplink\tpairs/spine port\tpairs/leaf uplink\n'
    row "mad sm -R ftree" "${mad_engine:-?}" "$work/mad.json"
    row "opensm ftree" "${osm_engine:-?}" "$work/osm.json"
} | column -t -s $'\t'
