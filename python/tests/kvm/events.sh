#!/bin/busybox sh
# The test body of python/tests/test_kernel_vm.py inside the kernel VM
# (tests/kvm/run.sh): CPython and the madstack package were shipped in
# /kvm/py (KVM_TREE). events_probe.py listens on rxe0 through the Python
# API while this takes rxe0's netdev (veth0) down and up, then gives it a
# new MAC (a new GID). Output between "KVM_BEGIN py_port_events" and
# "KVM_CASE py_port_events 0 <probe rc>", the probe's lines prefixed
# "events: ".
set -u
. /kvm/bin/lib.sh  # wait_line
export PYTHONHOME=/kvm/py/home PYTHONPATH=/kvm/py PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
OUT=/kvm/out
echo "KVM_BEGIN py_port_events"
echo "python $(python3 -c 'import sys; print(sys.version.split()[0])' 2>&1)"
python3 /kvm/py/events_probe.py rxe0 6 > "$OUT/events.log" 2>&1 &
pp=$!
wait_line "$OUT/events.log" "PY ready\|Error\|Traceback"
/usr/sbin/ip link set veth0 down
sleep 1
/usr/sbin/ip link set veth0 up
sleep 2
/usr/sbin/ip link set veth0 address 02:11:22:33:44:66
wait $pp
rc=$?
sed "s/^/events: /" "$OUT/events.log"
echo "KVM_CASE py_port_events 0 $rc"
exit 0
