#!/bin/busybox sh
# The kernel's side of kcm.sh (the second VM of run.sh with KVM_PEER_BODY):
# loads the kernel's CM (configfs, ib_cm, iw_cm, rdma_cm, rdma_ucm) and runs
# librdmacm's rping, which prints every rdma_cm event it gets (-d). Cases
# print the peer's lines prefixed "rping: " between "KVM_BEGIN name" and
# "KVM_CASE name 0 <rping rc>".
set -u
OUT=/kvm/out
. /kvm/bin/lib.sh
for m in $(cat /lib/modules/cm-order); do
    insmod /lib/modules/$m.ko || echo "KVM_ERR insmod $m"
done
d=/sys/class/misc/rdma_cm/dev
[ -e /dev/infiniband/rdma_cm ] || mknod /dev/infiniband/rdma_cm c $(tr ':' ' ' < $d)

# rping CASE ARGS: runs rping (at most 40 s) and prints the case.
rping_case() {
    name=$1; shift
    echo "KVM_BEGIN $name"
    timeout 40 rping -d "$@" > "$OUT/$name" 2>&1
    r=$?
    sed "s/^/rping: /" "$OUT/$name"
    echo "KVM_CASE $name 0 $r"
}

# A kernel listener for madstack's REQs (and its REQ to port 7472).
echo "KVM_BEGIN kcm_kernel_listener"
rping -s -d -a $KERNEL_IP -p 7471 > "$OUT/listener" 2>&1 &
rp=$!
# rping's own lines are buffered until it exits: ask the kernel instead.
n=0
until /usr/sbin/rdma resource show cm_id 2>/dev/null | grep -q LISTEN; do
    n=$((n + 1))
    [ $n -gt 300 ] && { echo "KVM_ERR rping is not listening"; break; }
    sleep 0.1
done
tell $MADSTACK_IP listening
hear done
kill $rp 2>/dev/null
wait $rp
sed "s/^/rping: /" "$OUT/listener"
echo "KVM_CASE kcm_kernel_listener 0 0"

hear listening
rping_case kcm_kernel_client -c -a $MADSTACK_IP -p 7471 -C 1
hear listening
rping_case kcm_kernel_client_rejected -c -a $MADSTACK_IP -p 7471 -C 1
tell $MADSTACK_IP finished
exit 0
