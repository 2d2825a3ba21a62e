#!/usr/bin/env bash
# Instructions per bench iteration (callgrind) of the `rmpp` and
# `agent_round_trip` benches, BASE_REV against this working tree, as the
# table in docs/benchmarks/architecture-side-by-side.md ("Instruction counts instead (callgrind)").
#
#   scripts/callgrind-compare.sh BASE_REV [ROW_REGEX]
#
# Builds benches/cg_harness.rs (bench profile, `cargo bench --no-run`) here
# and in a temporary `git worktree` of BASE_REV (removed afterwards, its
# target/ with it). A base that lacks the harness gets this tree's copy,
# with the items it calls in the base's own bench files made pub(crate)
# and a [[bench]] entry added to its Cargo.toml. The base's harness binary
# is kept in target/callgrind/ under the base's commit hash, so later runs
# against the same base do not rebuild it. ROW_REGEX (grep -E) limits the
# rows, e.g. 'round trip' or 'transfer_cold 1MiB'.
#
# Each row runs
#   valgrind --tool=callgrind --collect-atstart=no '--toggle-collect=*cg_measured*' \
#       HARNESS ARGS... N
# and prints collected instructions / N. The last column is this tree / base.
# Minor page faults per iteration (`/usr/bin/time`, not under valgrind,
# one warm iteration included) are printed for the transfer_cold rows.
set -euo pipefail

die() {
    echo "callgrind-compare: $*" >&2
    exit 2
}

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: scripts/callgrind-compare.sh BASE_REV [ROW_REGEX]"
command -v valgrind >/dev/null || die "valgrind is not installed"
root=$(git rev-parse --show-toplevel)
base=$(git -C "$root" rev-parse --verify "$1^{commit}") || die "$1 is not a commit"
filter=${2:-.}
out="$root/target/callgrind"
mkdir -p "$out"

# Path of the cg_harness bench executable cargo builds in tree $1.
build_harness() {
    (cd "$1" && cargo bench --no-run --bench cg_harness --message-format=json) |
        python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "cg_harness" and m.get("executable"):
        print(m["executable"])
'
}

base_bin="$out/cg_harness-$base"
if [ ! -x "$base_bin" ]; then
    tree=$(mktemp -d "${TMPDIR:-/tmp}/cg-base.XXXXXX")
    rmdir "$tree"
    cleanup() {
        git -C "$root" worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"
        git -C "$root" worktree prune
    }
    trap cleanup EXIT
    git -C "$root" worktree add --detach "$tree" "$base" >/dev/null
    if [ ! -e "$tree/benches/cg_harness.rs" ]; then
        cp "$root/benches/cg_harness.rs" "$tree/benches/"
        sed -i -E 's/^(fn (setup|round_trips)\()/pub(crate) \1/' "$tree/benches/agent_round_trip.rs"
        sed -i -E -e 's/^((fn (sa_header|segments|reassemble|transfer_cold)\()|struct Steady )/pub(crate) \1/' \
            -e 's/^    (fn (new|transfer)\()/    pub(crate) \1/' "$tree/benches/rmpp.rs"
        printf '\n[[bench]]\nname = "cg_harness"\nharness = false\n' >>"$tree/Cargo.toml"
    fi
    echo "building the harness at ${base:0:7} (temporary worktree)" >&2
    bin=$(build_harness "$tree")
    [ -x "$bin" ] || die "no cg_harness executable built at $base"
    cp "$bin" "$base_bin"
    cleanup
    trap - EXIT
fi

echo "building the harness in this tree" >&2
head_bin=$(build_harness "$root")
[ -x "$head_bin" ] || die "no cg_harness executable built in this tree"
head_name="$(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- . || echo +)"

# Instructions per iteration of harness $1 with arguments $2..; the last
# argument is N.
per_iter() {
    local bin=$1
    shift
    local n=${*: -1} log
    log=$(mktemp)
    valgrind --tool=callgrind --collect-atstart=no '--toggle-collect=*cg_measured*' \
        --callgrind-out-file=/dev/null "$bin" "$@" 2>"$log" >/dev/null ||
        { cat "$log" >&2; rm -f "$log"; die "$bin $* failed"; }
    python3 - "$log" "$n" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"Collected : (\d+)", text)
if not m:
    sys.exit("no 'Collected' line in callgrind's output")
print(round(int(m.group(1)) / int(sys.argv[2])))
EOF
    rm -f "$log"
}

# Minor page faults per iteration of harness $1 (N = last argument + 1 warm).
faults() {
    local bin=$1
    shift
    local n=${*: -1}
    /usr/bin/time -f %R "$bin" "$@" 2>&1 >/dev/null | tail -n 1 |
        python3 -c "import sys; print(round(int(sys.stdin.read()) / ($n + 1)))"
}

rows=()
for w in "1 2000" "16 200" "256 10"; do
    rows+=("agent round trip W=${w% *}|$w")
done
for bench in segment reassemble transfer transfer_cold; do
    for s in "1KiB 1024 2000" "16KiB 16384 200" "256KiB 262144 20" "1MiB 1048576 5" "4MiB 4194304 2"; do
        set -- $s
        rows+=("RMPP $bench $1|$bench $2 $3")
    done
done

fault_col=$([ -x /usr/bin/time ] && echo yes || echo no)
echo "| benchmark | ${base:0:7} | $head_name | $head_name / ${base:0:7} |$([ $fault_col = yes ] && echo ' minor faults/iter base → this |')"
echo "|---|---:|---:|---:|$([ $fault_col = yes ] && echo '---|')"
for row in "${rows[@]}"; do
    name=${row%%|*}
    args=${row#*|}
    echo "$name" | grep -Eq -- "$filter" || continue
    # shellcheck disable=SC2086
    b=$(per_iter "$base_bin" $args)
    # shellcheck disable=SC2086
    h=$(per_iter "$head_bin" $args)
    extra=""
    if [ $fault_col = yes ] && [[ $name == *transfer_cold* ]]; then
        # shellcheck disable=SC2086
        extra=" $(faults "$base_bin" $args) → $(faults "$head_bin" $args) |"
    elif [ $fault_col = yes ]; then
        extra=" |"
    fi
    python3 -c "import sys; b, h = int(sys.argv[2]), int(sys.argv[3]); print(f'| {sys.argv[1]} | {b:,} | {h:,} | **{h / b:.3f}×** |{sys.argv[4]}')" \
        "$name" "$b" "$h" "$extra"
done
