#!/usr/bin/env bash
# Boots madstack's kernel VM once and runs a test body inside it.
#
#   tests/kvm/run.sh BODY [PROGRAM...]
#
# BODY is a busybox-sh script run as the guest's test body (cwd /kvm/out,
# GID0 / GID1 = GID index 0 of rxe0 / rxe1, which change every boot).
# Each PROGRAM (a dynamically linked x86-64 program of this host) is put in
# the guest's /kvm/bin with the libraries ldd finds for it; a PROGRAM that is
# a script (#!) is put there as is, to run under the guest's busybox sh.
# The guest console is copied to stdout; the exit status is the body's
# (124: the VM did not finish within $KVM_TIMEOUT seconds, default 600;
# 125: harness failure).
#
# With KVM_PEER_BODY=SCRIPT, two VMs boot at once, joined by a qemu socket
# network (an e1000 NIC each, on 127.0.0.1 only): the first runs BODY with
# eth0 = 10.77.0.1/24, the second SCRIPT with 10.77.0.2/24 (the same
# PROGRAMs in both), each with one soft-RoCE device rxe0 on eth0 and no
# veth pair (GID0 is its own GID; the MACs, hence the link-local GIDs, are
# fixed: fe80::5054:ff:fe4d:4101 and fe80::5054:ff:fe4d:4102). Both
# consoles are copied to stdout, the first VM's first; the exit status is
# the first nonzero of the two bodies'.
#
# Environment: MADSTACK_KVM_DIR (base image cache, default target/kvm),
# KVM_TIMEOUT, KVM_MEM (MiB, default 1024), KVM_LOG (console copy; with a
# peer, the peer's goes to KVM_LOG.peer), KVM_PEER_BODY, KVM_TREE (a
# directory whose contents are added to the guest's root as they are:
# files PROGRAM does not cover, e.g. an interpreter's library, as
# python/tests/test_kernel_vm.py ships CPython and the madstack package).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DIR="${MADSTACK_KVM_DIR:-$ROOT/target/kvm}"
die() { echo "kvm/run.sh: $*" >&2; exit 125; }
[ $# -ge 1 ] || die "usage: run.sh BODY [PROGRAM...]"
BODY="$1"; shift
PEER="${KVM_PEER_BODY:-}"
[ -f "$BODY" ] || die "no test body $BODY"
[ -z "$PEER" ] || [ -f "$PEER" ] || die "no peer body $PEER"
bash "$HERE/build.sh" "$DIR" >&2 || die "build.sh failed"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing (Debian package qemu-system-x86)"

T="$(mktemp -d "${TMPDIR:-/tmp}/madstack-kvm.XXXXXX")" || die "mktemp failed"
QPIDS=()
cleanup() { for p in "${QPIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
O="$T/root"
mkdir -p "$O/kvm/bin" "$O/lib/x86_64-linux-gnu"
if [ -n "${KVM_TREE:-}" ]; then
    [ -d "$KVM_TREE" ] || die "KVM_TREE is no directory: $KVM_TREE"
    cp -a "$KVM_TREE"/. "$O"/ || die "cannot copy KVM_TREE $KVM_TREE"
fi
for p in "$@"; do
    [ -x "$p" ] || die "not an executable: $p"
    cp -L "$p" "$O/kvm/bin/"
    if [ "$(head -c2 "$p")" = "#!" ]; then # a script: runs under the guest's busybox sh
        sed -i '1s|^#!.*|#!/bin/busybox sh|' "$O/kvm/bin/$(basename "$p")"
        continue
    fi
    out="$(ldd "$p" 2>&1)" || die "ldd $p: $out"
    if echo "$out" | grep -q 'not found'; then die "$p needs libraries this host lacks: $out"; fi
    for l in $(echo "$out" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'); do
        [ -e "$O$l" ] || { mkdir -p "$O$(dirname "$l")"; cp -L "$l" "$O$l"; }
    done
done

initrd() { # BODY OUT: the base image plus an overlay with BODY as /kvm/run
    cp "$1" "$O/kvm/run"
    chmod +x "$O/kvm/run"
    sed -i '1s|^#!.*|#!/bin/busybox sh|' "$O/kvm/run"
    (cd "$O" && find . | cpio -o -H newc --quiet | gzip -1) > "$T/overlay.cpio.gz" || die "cpio failed"
    cat "$DIR/base.cpio.gz" "$T/overlay.cpio.gz" > "$2"
}

boot() { # INITRD LOG NIC [KERNEL ARGS]: one VM in the background (pid in QPIDS)
    # TCG: KVM is not usable inside the machines this runs on (nested).
    timeout --kill-after=10 "${KVM_TIMEOUT:-600}" qemu-system-x86_64 -accel tcg -m "${KVM_MEM:-1024}" -smp 2 \
        -nographic -no-reboot $3 -kernel "$DIR/vmlinuz" -initrd "$1" \
        -append "console=ttyS0 quiet panic=-1 loglevel=3 ${4:-}" </dev/null > "$2" 2>&1 &
    QPIDS+=($!)
}

body_rc() { # LOG QEMU-EXIT: the body's exit status from its console
    local rc
    rc="$(tr -d '\r' < "$1" | sed -n 's/^KVM_EXIT \([0-9]*\)$/\1/p' | tail -1)"
    if [ -z "$rc" ]; then
        if [ "$2" = 124 ] || [ "$2" = 137 ]; then
            echo "kvm/run.sh: the VM did not finish within ${KVM_TIMEOUT:-600} s" >&2; rc=124
        else
            echo "kvm/run.sh: the guest died before its body finished (qemu exit $2)" >&2; rc=125
        fi
    fi
    echo "$rc"
}

LOG="${KVM_LOG:-$T/console.log}"
start=$(date +%s.%N)
initrd "$BODY" "$T/initrd.cpio.gz"
if [ -z "$PEER" ]; then
    boot "$T/initrd.cpio.gz" "$LOG" "-nic none"
    wait "${QPIDS[0]}"
    qrc=$?
    QPIDS=()
    cat "$LOG"
    rc="$(body_rc "$LOG" "$qrc")"
else
    PLOG="${KVM_LOG:+$KVM_LOG.peer}"
    PLOG="${PLOG:-$T/peer.log}"
    initrd "$PEER" "$T/peer.cpio.gz"
    PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')" ||
        die "no free TCP port on 127.0.0.1"
    boot "$T/initrd.cpio.gz" "$LOG" "-nic socket,listen=127.0.0.1:$PORT,model=e1000,mac=52:54:00:4d:41:01" \
        "madstack_nic=10.77.0.1/24"
    # The second VM connects to the first's socket once it listens.
    for _ in $(seq 1 50); do
        grep -q ":$(printf '%04X' "$PORT") .* 0A " /proc/net/tcp 2>/dev/null && break
        sleep 0.1
    done
    boot "$T/peer.cpio.gz" "$PLOG" "-nic socket,connect=127.0.0.1:$PORT,model=e1000,mac=52:54:00:4d:41:02" \
        "madstack_nic=10.77.0.2/24"
    wait "${QPIDS[0]}"
    qrc=$?
    wait "${QPIDS[1]}"
    prc=$?
    QPIDS=()
    cat "$LOG" "$PLOG"
    rc="$(body_rc "$LOG" "$qrc")"
    prc="$(body_rc "$PLOG" "$prc")"
    [ "$rc" = 0 ] && rc="$prc"
fi
end=$(date +%s.%N)
echo "KVM_HOST wall $(awk "BEGIN {printf \"%.1f\", $end - $start}") s"
exit "$rc"
