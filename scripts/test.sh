#!/usr/bin/env bash
# Runs every test of madstack: the one command for CI and for a fresh Debian
# machine. Works from any directory.
#
#   1. installs the Debian packages the tests use, when one is missing
#      (apt-get, as root or through sudo), and cargo-fuzz when missing;
#   2. cargo fmt --check, cargo clippy -D warnings, the static checks
#      (scripts/module-cycles.py, scripts/check-mad-offsets.py: no header
#      offsets in production code, at most a few test files, each saying why),
#      cargo test --benches --no-run (every benchmark builds and links,
#      in the test profile whose dependencies cargo test builds anyway;
#      the bench profile's optimized build of everything took 8 of CI's
#      minutes for what clippy --all-targets and this already check),
#      cargo test --workspace (which includes the
#      real-kernel tests: tests/kernel_vm.rs and tools/tests/kernel_vm_diags.rs
#      boot Debian's kernel under qemu with two soft-RoCE ports, tests/kvm;
#      tools/tests/kernel_vm_kcm.rs boots two such VMs, one with the
#      kernel's own CM);
#   3. the Python package: a venv, pip install ./python, pytest python/tests;
#   4. every fuzz target under fuzz/ for a bounded number of runs and time.
#
# Environment knobs: FUZZ_RUNS (default 20000) and FUZZ_SECONDS (default 10)
# bound each fuzz target; SKIP_FUZZ=1 skips step 3 (for quick local runs).
# Exits non-zero when any step fails; every step runs even after a failure.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

FUZZ_RUNS="${FUZZ_RUNS:-20000}"
FUZZ_SECONDS="${FUZZ_SECONDS:-10}"
START=$(date +%s)
FAILED=()
LOGDIR="$(mktemp -d "${TMPDIR:-/tmp}/madstack-test.XXXXXX")"
trap 'rm -rf "$LOGDIR"' EXIT

step() { printf '\n==> %s\n' "$*"; }
elapsed() { echo "$(( $(date +%s) - START ))s"; }
fail() { FAILED+=("$1"); printf '!! FAILED: %s\n' "$1"; }

# ---------------------------------------------------------------- packages
DEB_PACKAGES=(python3-venv  # the madstack Python package's venv (python/)
              tshark libibmad-dev ibsim-utils libumad2sim0 opensm infiniband-diags
              libibumad3 libopensm-dev gcc
              prometheus  # mad exporter's test: a real Prometheus scrapes it, promtool checks /metrics
              # the kernel VM (tests/kvm): qemu under TCG, a busybox initramfs,
              # the C peer's libibumad.a, verbs for device events; the kernel
              # image itself is downloaded (not installed) by tests/kvm/build.sh
              qemu-system-x86 busybox-static libibumad-dev libibverbs1 ibverbs-providers
              iproute2 kmod cpio
              time  # GNU time: the peak RSS of a refused cache file in tools/tests/input_limits.rs
              rdmacm-utils)  # rping: the kernel CM's user in tools/tests/kernel_vm_kcm.rs

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "need root or sudo to run: $*" >&2
        return 1
    fi
}

step "Debian packages"
missing=()
for p in "${DEB_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q \
        || ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; then
        fail "apt-get install ${missing[*]}"
    fi
else
    echo "all present: ${DEB_PACKAGES[*]}"
fi

# ---------------------------------------------------------------- toolchain
step "Rust toolchain"
cargo --version
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    rustup component add rustfmt clippy || fail "rustup component add rustfmt clippy"
fi
if [ "${SKIP_FUZZ:-0}" != 1 ]; then
    if ! cargo +nightly --version >/dev/null 2>&1; then
        rustup toolchain install nightly --profile minimal || fail "rustup toolchain install nightly"
    fi
    if ! cargo fuzz --version >/dev/null 2>&1; then
        cargo install cargo-fuzz --locked || fail "cargo install cargo-fuzz"
    fi
fi

# ---------------------------------------------------------------- checks
step "cargo fmt --all -- --check ($(elapsed))"
cargo fmt --all -- --check || fail "cargo fmt --check"

step "cargo clippy --workspace --all-targets -- -D warnings ($(elapsed))"
cargo clippy --workspace --all-targets -- -D warnings || fail "cargo clippy"

step "no import cycles between the modules of a crate ($(elapsed))"
python3 scripts/module-cycles.py || fail "module import cycles (scripts/module-cycles.py)"

step "no MAD header byte indexed by offset outside mad-wire; test files that do are few and say why ($(elapsed))"
python3 scripts/check-mad-offsets.py || fail "raw MAD header offsets in production or test files (scripts/check-mad-offsets.py)"

step "cargo test --workspace --benches --no-run: the benchmarks build ($(elapsed))"
cargo test --workspace --benches --no-run || fail "cargo test --benches --no-run"

step "cargo test --workspace --no-fail-fast ($(elapsed))"
cargo test --workspace --no-fail-fast 2>&1 | tee "$LOGDIR/test.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "cargo test --workspace"

# ---------------------------------------------------------------- python
# The madstack Python package (python/): a venv, `pip install ./python`
# (maturin builds the pyo3 extension in the dev profile into the
# workspace's target dir, so that it reuses what `cargo test` built:
# seconds instead of a release build of every crate), then pytest against
# the built-in fabric, ibsim + OpenSM, the kernel VM (test_kernel_vm.py:
# one boot of tests/kvm with this CPython and the package inside, for the
# port's events) and the examples. With CI=true a
# missing piece fails the tests.
step "python: pip install ./python, pytest python/tests ($(elapsed))"
PYVENV="$ROOT/target/python-venv"
if { [ -x "$PYVENV/bin/python" ] || python3 -m venv "$PYVENV"; } \
    && "$PYVENV/bin/pip" install -q --upgrade maturin pytest networkx prometheus_client \
    && MATURIN_PEP517_ARGS="--profile dev" CARGO_TARGET_DIR="$ROOT/target" \
        "$PYVENV/bin/pip" install -q --force-reinstall --no-deps ./python; then
    cargo build -q -p mad-tools --bin mad || fail "cargo build --bin mad (for the Python JSON tests)"
    (cd "$ROOT/python/tests" && MAD_BIN="$ROOT/target/debug/mad" CI="${CI:-}" \
        "$PYVENV/bin/python" -m pytest -q -p no:cacheprovider .) || fail "pytest python/tests"
else
    fail "python venv / pip install ./python"
fi

# ---------------------------------------------------------------- fuzz
if [ "${SKIP_FUZZ:-0}" != 1 ]; then
    step "fuzz targets: -runs=$FUZZ_RUNS, at most ${FUZZ_SECONDS}s each ($(elapsed))"
    if cargo +nightly fuzz build --fuzz-dir fuzz >"$LOGDIR/fuzz-build.log" 2>&1; then
        targets=$(cargo +nightly fuzz list --fuzz-dir fuzz)
        n=0
        for t in $targets; do
            n=$((n + 1))
            mkdir -p "fuzz/corpus/$t"
            # New inputs go to fuzz/corpus/TARGET; fuzz/seeds (real MADs, a
            # pcap, hex text) is read as a second corpus.
            if cargo +nightly fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus/$t" fuzz/seeds -- \
                -runs="$FUZZ_RUNS" -max_total_time="$FUZZ_SECONDS" \
                >"$LOGDIR/fuzz-$t.log" 2>&1; then
                printf 'fuzz %-32s ok (%s)\n' "$t" \
                    "$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second\(s\)' "$LOGDIR/fuzz-$t.log" | tail -1)"
            else
                tail -40 "$LOGDIR/fuzz-$t.log"
                fail "fuzz target $t"
            fi
        done
        [ "$n" -gt 0 ] || fail "no fuzz targets found"
    else
        tail -60 "$LOGDIR/fuzz-build.log"
        fail "cargo fuzz build"
    fi
fi

# ---------------------------------------------------------------- summary
step "summary ($(elapsed))"
grep -E '^test result:' "$LOGDIR/test.log" || true
passed=$(grep -Eo '^test result: [a-zA-Z]+\. [0-9]+ passed' "$LOGDIR/test.log" | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
failed=$(grep -E '^test result:' "$LOGDIR/test.log" | grep -Eo '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
if [ ${#FAILED[@]} -gt 0 ]; then
    printf 'failed steps:\n'
    printf '  %s\n' "${FAILED[@]}"
fi
echo "total time: $(elapsed)"
echo "tests: $passed passed, $failed failed"
[ ${#FAILED[@]} -eq 0 ] && [ "$failed" -eq 0 ]
