#!/bin/busybox sh
# The test body of madstack's real-kernel tests (run by tests/kvm/run.sh
# inside the VM; tests/kernel_vm.rs boots it and checks each case).
# rxe0 and rxe1 are soft-RoCE ports on the two ends of a veth pair; kpeer is
# the kernel's own RMPP (libibumad, rmpp_version 1), rmpp-peer is madstack.
# Each case prints its programs' output between "KVM_BEGIN name" and
# "KVM_CASE name <receiver rc> <sender rc>".
set -u
OUT=/kvm/out
TMO=3000   # kernel RMPP sends: above 2000 ms (with 0 < t <= 2000 a 6.1 kernel can miss a timeout)

waitfor() { # file pattern: wait up to 10 s for a line
    i=0
    while [ $i -lt 100 ]; do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1; i=$((i + 1))
    done
    echo "KVM_ERR no '$2' in $1"; return 1
}

# case NAME "RECEIVER CMD" "SENDER CMD": the receiver starts first and must
# say it is ready (its agent registered) before the sender starts.
case_pair() {
    name=$1; rcmd=$2; scmd=$3
    echo "KVM_BEGIN $name"
    $rcmd > "$OUT/$name.recv" 2>&1 &
    rp=$!
    waitfor "$OUT/$name.recv" "READY\|ready"
    t0=$(cut -d' ' -f1 /proc/uptime)
    $scmd > "$OUT/$name.send" 2>&1
    s=$?
    wait $rp
    r=$?
    t1=$(cut -d' ' -f1 /proc/uptime)
    sed "s/^/recv: /" "$OUT/$name.recv"
    sed "s/^/send: /" "$OUT/$name.send"
    echo "KVM_TIME $name $t0 $t1"
    echo "KVM_CASE $name $r $s"
}

for len in 4096 65000 1048576; do
    case_pair "kernel_to_madstack_$len" "rmpp-peer recv rxe0 $len 1 60" "kpeer send rxe1 $GID0 $len 1 $TMO"
    case_pair "madstack_to_kernel_$len" "kpeer recv rxe1 $len 1 reply 60" "rmpp-peer send rxe0 $GID1 $len 1 $TMO"
done
case_pair kernel_to_madstack_5x "rmpp-peer recv rxe0 4096 5 30" "kpeer send rxe1 $GID0 4096 5 $TMO"
case_pair madstack_to_kernel_5x "kpeer recv rxe1 4096 5 reply 30" "rmpp-peer send rxe0 $GID1 4096 5 $TMO"
case_pair madstack_double_sided "rmpp-peer recv rxe1 65000 1 60 70000" "rmpp-peer send rxe0 $GID1 65000 1 $TMO 70000"
case_pair madstack_sa_get_table "rmpp-peer sa-serve rxe1 10000 100" "rmpp-peer sa-get rxe0 $GID1 10000"
case_pair claim_held_class "kpeer hold rxe1 4" "rmpp-peer claim rxe1"

# A GID nobody has: the send must end with a status, within its deadline.
echo "KVM_BEGIN unreachable_gid"
rmpp-peer send rxe0 fe80::1234:5678:9abc:def0 4096 1 1000 > "$OUT/unreachable.send" 2>&1
s=$?
sed "s/^/send: /" "$OUT/unreachable.send"
echo "KVM_CASE unreachable_gid 0 $s"

# Port events: link down and up, then a new MAC (a new GID).
echo "KVM_BEGIN port_events"
rm -f /tmp/stop
rmpp-peer events rxe0 2 /tmp/stop > "$OUT/events.log" 2>&1 &
ep=$!
waitfor "$OUT/events.log" "PEER ready"
/usr/sbin/ip link set veth0 down
sleep 1
/usr/sbin/ip link set veth0 up
sleep 2
/usr/sbin/ip link set veth0 address 02:11:22:33:44:55
sleep 2
touch /tmp/stop
wait $ep
e=$?
sed "s/^/events: /" "$OUT/events.log"
echo "sysfs gid $(cat /sys/class/infiniband/rxe0/ports/1/gids/0)"
echo "KVM_CASE port_events 0 $e"

# Seed 002's device-fatal row on a shared port (seed 004): an SA client,
# the CM and a user agent on rxe0's one shared port, with 8 user sends and
# an SA request pending at a sink on rxe1 that never answers; then
# `rdma link del rxe0`. The removal returns once the program has closed
# the device (its last handle on the port gone): up to 60 s. Last case:
# rxe0 is gone afterwards.
echo "KVM_BEGIN shared_port_device_fatal"
rmpp-peer shared-fatal rxe0 rxe1 $GID1 8 > "$OUT/shared.log" 2>&1 &
sp=$!
waitfor "$OUT/shared.log" "SHARED pending"
rdma link del rxe0 &
dp=$!
n=0
while kill -0 $dp 2>/dev/null && [ $n -lt 600 ]; do
    n=$((n + 1))
    sleep 0.1
done
if kill -0 $dp 2>/dev/null; then
    echo "removal: rdma link del rxe0 still blocked after 60 s"
    kill -9 $sp
else
    wait $dp
    echo "removal: rdma link del rxe0 returned $?"
fi
wait $sp
s=$?
sed "s/^/shared: /" "$OUT/shared.log"
echo "KVM_CASE shared_port_device_fatal 0 $s"
exit 0
