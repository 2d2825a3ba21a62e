#!/usr/bin/env bash
# Boots madstack's kernel VM once and runs a test body inside it.
#
#   tests/kvm/run.sh BODY [PROGRAM...]
#
# BODY is a busybox-sh script run as the guest's test body (cwd /kvm/out,
# GID0 / GID1 = GID index 0 of rxe0 / rxe1, which change every boot).
# Each PROGRAM (a dynamically linked x86-64 program of this host) is put in
# the guest's /kvm/bin with the libraries ldd finds for it; a PROGRAM that is
# a script (#!) is put there as is, to run under the guest's busybox sh. The guest console
# is copied to stdout; the exit status is the body's (124: the VM did not
# finish within $KVM_TIMEOUT seconds, default 600; 125: harness failure).
#
# Environment: MADSTACK_KVM_DIR (base image cache, default target/kvm),
# KVM_TIMEOUT, KVM_MEM (MiB, default 1024), KVM_LOG (console copy).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DIR="${MADSTACK_KVM_DIR:-$ROOT/target/kvm}"
die() { echo "kvm/run.sh: $*" >&2; exit 125; }
[ $# -ge 1 ] || die "usage: run.sh BODY [PROGRAM...]"
BODY="$1"; shift
[ -f "$BODY" ] || die "no test body $BODY"
bash "$HERE/build.sh" "$DIR" >&2 || die "build.sh failed"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing (Debian package qemu-system-x86)"

T="$(mktemp -d "${TMPDIR:-/tmp}/madstack-kvm.XXXXXX")" || die "mktemp failed"
QPID=
cleanup() { [ -n "$QPID" ] && kill "$QPID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
O="$T/root"
mkdir -p "$O/kvm/bin" "$O/lib/x86_64-linux-gnu"
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
cp "$BODY" "$O/kvm/run"
chmod +x "$O/kvm/run"
sed -i '1s|^#!.*|#!/bin/busybox sh|' "$O/kvm/run"
(cd "$O" && find . | cpio -o -H newc --quiet | gzip -1) > "$T/overlay.cpio.gz" || die "cpio failed"
cat "$DIR/base.cpio.gz" "$T/overlay.cpio.gz" > "$T/initrd.cpio.gz"

LOG="${KVM_LOG:-$T/console.log}"
start=$(date +%s.%N)
# TCG: KVM is not usable inside the machines this runs on (nested).
timeout --kill-after=10 "${KVM_TIMEOUT:-600}" qemu-system-x86_64 -accel tcg -m "${KVM_MEM:-1024}" -smp 2 \
    -nographic -no-reboot -nic none -kernel "$DIR/vmlinuz" -initrd "$T/initrd.cpio.gz" \
    -append "console=ttyS0 quiet panic=-1 loglevel=3" </dev/null > "$LOG" 2>&1 &
QPID=$!
wait "$QPID"
qrc=$?
QPID=
cat "$LOG"
end=$(date +%s.%N)
echo "KVM_HOST wall $(awk "BEGIN {printf \"%.1f\", $end - $start}") s"
rc="$(tr -d '\r' < "$LOG" | sed -n 's/^KVM_EXIT \([0-9]*\)$/\1/p' | tail -1)"
if [ -z "$rc" ]; then
    if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
        echo "kvm/run.sh: the VM did not finish within ${KVM_TIMEOUT:-600} s" >&2; rc=124
    else
        echo "kvm/run.sh: the guest died before its body finished (qemu exit $qrc)" >&2; rc=125
    fi
fi
exit "$rc"
