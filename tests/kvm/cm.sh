#!/bin/busybox sh
# madstack's connection manager on both ends inside the kernel VM: `mad cm`
# listens on rxe1 and connects from rxe0 (soft-RoCE on the two ends of a
# veth pair). The kernel's ib_cm is not loaded (init.sh loads no CM
# module), so class 0x07 on QP1 is madstack's on both ports. RoCE has no
# LIDs and no SA: the active side names its peer by GID and every CM MAD
# carries a GRH. Run from diags.sh (the same boot as the diags
# comparison); tools/tests/kernel_vm_diags.rs checks each case. Each case
# prints between "KVM_BEGIN name" and "KVM_CASE name <listen rc> <connect rc>",
# lines prefixed "listen: " / "connect: " (and "connectN: " for more).
set -u
OUT=/kvm/out
. /kvm/bin/lib.sh
L="mad -C rxe1 -P 1 cm listen -w 60"
C="mad -C rxe0 -P 1 cm connect $GID1 -w 60"

# The kernel's CM must not own class 0x07.
for m in ib_cm rdma_cm; do
    grep -q "^$m " /proc/modules && echo "KVM_ERR $m is loaded"
done

# cm_case NAME "LISTEN OPTIONS" "CONNECT OPTIONS"
cm_case() {
    echo "KVM_BEGIN $1"
    $L $2 > "$OUT/$1.listen" 2>&1 &
    lp=$!
    wait_line "$OUT/$1.listen" "^listening"
    $C $3 > "$OUT/$1.connect" 2>&1
    c=$?
    wait $lp
    l=$?
    sed "s/^/listen: /" "$OUT/$1.listen"
    sed "s/^/connect: /" "$OUT/$1.connect"
    echo "KVM_CASE $1 $l $c"
}

cm_case cm_connect "" "--qpn 0x42 --hold 200"
cm_case cm_reject "--reject 28" ""
# The active side waits 2.4 s for an answer and never resends: only the
# MRA keeps it waiting for the REP that comes 3 s later.
cm_case cm_mra "--delay 3000" "--retries 0 --response-timeout 16"
cm_case cm_passive_disconnect "--hold 300" "--hold 30000"
# Simultaneous disconnect, made certain: netem delays every frame by
# 300 ms on both veths (iproute2's tc, by absolute path: busybox has a tc
# without netem), so each side's DREQ is on the wire for 300 ms. The
# listener hears ESTABLISHED one delay after the active side (the RTU's
# trip), so the active side holds one delay longer: both send their DREQ
# at about the same moment, and each receives the other's while its own
# is outstanding (-v prints that cause: "in state DREQ sent").
for v in veth0 veth1; do
    /usr/sbin/tc qdisc add dev $v root netem delay 300ms || echo "KVM_ERR netem on $v"
done
cm_case cm_simultaneous_disconnect "-v --hold 1000" "-v --hold 1300"
for v in veth0 veth1; do
    /usr/sbin/tc -s qdisc show dev $v
done | awk '$1 == "Sent" {n += $4} END {print "netem: delayed " n " packets"}'
for v in veth0 veth1; do
    /usr/sbin/tc qdisc del dev $v root || echo "KVM_ERR netem off $v"
done

# QP 0x77 connects, disconnects and at once connects again: the listener
# still holds it in timewait (stale), then takes it once timewait is over.
cm_case cm_stale_after_timewait "-n 2" "--qpn 0x77 --hold 0 -n 2"

# An active side without a QP: the REP is a CONNECT_RESPONSE, the RTU
# follows it.
cm_case cm_no_qp "" "--no-qp --hold 200"

# The active side dies once its REQ is MRAed: the REP the listener sends a
# second later is never answered (no resends: the REQ allowed none).
echo "KVM_BEGIN cm_active_gone"
$L --delay 1000 > "$OUT/cm_active_gone.listen" 2>&1 &
lp=$!
wait_line "$OUT/cm_active_gone.listen" "^listening"
$C --retries 0 --response-timeout 14 > "$OUT/cm_active_gone.connect" 2>&1 &
cp=$!
wait_line "$OUT/cm_active_gone.listen" "MRA sent"
kill -9 $cp
wait $cp
c=$?
wait $lp
l=$?
sed "s/^/listen: /" "$OUT/cm_active_gone.listen"
sed "s/^/connect: /" "$OUT/cm_active_gone.connect"
echo "KVM_CASE cm_active_gone $l $c"

# Nobody listens on rxe1 (no process owns class 0x07 there): the REQ and
# its one resend go unanswered.
echo "KVM_BEGIN cm_unreachable"
$C --retries 1 --response-timeout 14 > "$OUT/cm_unreachable.connect" 2>&1
c=$?
sed "s/^/connect: /" "$OUT/cm_unreachable.connect"
echo "KVM_CASE cm_unreachable 0 $c"

# The device goes away under a listener with an established connection:
# `rdma link del rxe1` kills rxe1's umad port (reads fail with EIO); the
# listener prints DEVICE_REMOVAL for the connection and for itself, closes
# the device and exits 1, and only then can the removal finish (rxe cannot
# disassociate a process's verbs context). The active side, on rxe0, holds
# 3 s, then its DREQ and one resend go unanswered. Last case: rxe1 is
# added again afterwards for whatever runs next.
echo "KVM_BEGIN cm_device_removal"
$L > "$OUT/cm_device_removal.listen" 2>&1 &
lp=$!
wait_line "$OUT/cm_device_removal.listen" "^listening"
$C -v --hold 3000 --retries 1 --response-timeout 14 > "$OUT/cm_device_removal.connect" 2>&1 &
cp=$!
wait_line "$OUT/cm_device_removal.listen" "ESTABLISHED"
rdma link del rxe1 &
dp=$!
# The removal returns once the listener has closed the device: up to 20 s.
n=0
while kill -0 $dp 2>/dev/null && [ $n -lt 200 ]; do
    n=$((n + 1))
    sleep 0.1
done
if kill -0 $dp 2>/dev/null; then
    echo "removal: rdma link del rxe1 still blocked after 20 s"
    kill -9 $lp
else
    wait $dp
    echo "removal: rdma link del rxe1 returned $?"
fi
wait $lp
l=$?
wait $cp
c=$?
sed "s/^/listen: /" "$OUT/cm_device_removal.listen"
sed "s/^/connect: /" "$OUT/cm_device_removal.connect"
echo "KVM_CASE cm_device_removal $l $c"
rdma link add rxe1 type rxe netdev veth1 || echo "KVM_ERR rdma link add rxe1 again"
