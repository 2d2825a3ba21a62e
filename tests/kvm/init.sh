#!/bin/busybox sh
# /init of madstack's kernel VM: loads the RDMA modules, makes a veth pair
# with a soft-RoCE device on each end (rxe0 on veth0, rxe1 on veth1), then
# runs the test body /kvm/run from the overlay archive and powers off.
# Everything the host reads comes on the console, one line per fact:
#   KVM_T <what> <uptime>      timings
#   KVM_EXIT <rc>              the body's exit status (last line)
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm /dev/pts
mount -t tmpfs shm /dev/shm
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
echo "KVM_T init $(cut -d' ' -f1 /proc/uptime)"
for m in $(cat /lib/modules/order); do
    insmod /lib/modules/$m.ko || echo "KVM_ERR insmod $m"
done
# No duplicate address detection: the link-local GIDs must work at once.
echo 0 > /proc/sys/net/ipv6/conf/all/accept_dad
echo 0 > /proc/sys/net/ipv6/conf/default/accept_dad
/usr/sbin/ip link set lo up
# madstack_nic=ADDR/LEN on the kernel command line (tests/kvm/run2.sh: two
# VMs on one qemu socket network): rxe0 on the NIC eth0 with that IPv4
# address, no veth pair.
NIC=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^madstack_nic=//p')
if [ -n "$NIC" ]; then
    /usr/sbin/ip addr add "$NIC" dev eth0 || echo "KVM_ERR no eth0"
    /usr/sbin/ip link set eth0 up
    /usr/sbin/rdma link add rxe0 type rxe netdev eth0 || echo "KVM_ERR rdma link add rxe0"
    DEVS=rxe0
else
    /usr/sbin/ip link add veth0 type veth peer name veth1
    /usr/sbin/ip link set veth0 up
    /usr/sbin/ip link set veth1 up
    /usr/sbin/rdma link add rxe0 type rxe netdev veth0 || echo "KVM_ERR rdma link add rxe0"
    /usr/sbin/rdma link add rxe1 type rxe netdev veth1 || echo "KVM_ERR rdma link add rxe1"
    DEVS="rxe0 rxe1"
fi
for i in $(seq 1 100); do
    up=1
    for d in $DEVS; do
        grep -q ACTIVE /sys/class/infiniband/$d/ports/1/state 2>/dev/null || up=0
    done
    [ $up = 1 ] && break
    sleep 0.1
done
mkdir -p /dev/infiniband
for u in /sys/class/infiniband_mad/umad* /sys/class/infiniband_verbs/uverbs*; do
    [ -e "$u/dev" ] || continue
    n=$(basename "$u")
    [ -e /dev/infiniband/$n ] || mknod /dev/infiniband/$n c $(tr ':' ' ' < "$u/dev")
done
# Warm the IPv6 neighbour caches both ways: otherwise the first MAD after
# boot waits for neighbour discovery and costs a retry.
G0=$(cat /sys/class/infiniband/rxe0/ports/1/gids/0)
if [ -z "$NIC" ]; then
    G1=$(cat /sys/class/infiniband/rxe1/ports/1/gids/0)
    ping -6 -c1 -W2 "$G1%veth0" >/dev/null 2>&1 || echo "KVM_ERR warm-up ping veth0 -> veth1"
    ping -6 -c1 -W2 "$G0%veth1" >/dev/null 2>&1 || echo "KVM_ERR warm-up ping veth1 -> veth0"
else
    G1=
fi
echo "KVM_T ready $(cut -d' ' -f1 /proc/uptime)"
if [ -x /kvm/run ]; then
    export HOME=/root LANG=C.UTF-8 TERM=dumb GID0="$G0" GID1="$G1"
    export PATH=/kvm/bin:$PATH
    mkdir -p /kvm/out
    cd /kvm/out
    /kvm/run
    rc=$?
else
    echo "KVM_ERR no test body (/kvm/run)"
    rc=125
fi
echo "KVM_T done $(cut -d' ' -f1 /proc/uptime)"
echo "KVM_EXIT $rc"
sleep 0.2
poweroff -f
