#!/bin/busybox sh
# madstack's CM against the Linux kernel's own (ib_cm + rdma_cm): this VM
# runs madstack (`mad cm` on rxe0, no kernel CM loaded), the second VM of
# run.sh (KVM_PEER_BODY=kcm-peer.sh) loads ib_cm / rdma_cm / rdma_ucm and
# runs librdmacm's rping. RoCE over a qemu socket network: no LIDs, no SA;
# the REQ carries rdma_cm's header with the IPv4 addresses. Each case prints
# between "KVM_BEGIN name" and "KVM_CASE name <listen rc> <connect rc>";
# tools/tests/kernel_vm_kcm.rs checks them with the peer's own cases.
set -u
OUT=/kvm/out
. /kvm/bin/lib.sh
MAD="mad -C rxe0 -P 1 cm"
CMA="--cma $MADSTACK_IP,$KERNEL_IP"

# madstack's REQ to rping's listener (rdma_cm's TCP port 7471): the
# kernel's REP, our RTU, established on both sides, our DREQ.
hear listening
echo "KVM_BEGIN kcm_madstack_to_kernel"
$MAD connect $KERNEL_GID $CMA --qpn 0x4242 --hold 1000 -w 60 > "$OUT/k1" 2>&1
c=$?
sed "s/^/connect: /" "$OUT/k1"
echo "KVM_CASE kcm_madstack_to_kernel 0 $c"

# Nobody listens on port 7472: the kernel's ib_cm rejects the REQ
# (invalid service ID, 8).
echo "KVM_BEGIN kcm_kernel_rejects"
$MAD connect $KERNEL_GID $CMA -S 0x1061d30 -w 60 > "$OUT/k2" 2>&1
c=$?
sed "s/^/connect: /" "$OUT/k2"
echo "KVM_CASE kcm_kernel_rejects 0 $c"
tell $KERNEL_IP done

# listen_case NAME OPTIONS: madstack listens, the kernel VM's rping
# connects once told.
listen_case() {
    echo "KVM_BEGIN $1"
    $MAD listen $2 -w 60 > "$OUT/$1" 2>&1 &
    lp=$!
    wait_line "$OUT/$1" "^listening"
    tell $KERNEL_IP listening
    wait $lp
    l=$?
    sed "s/^/listen: /" "$OUT/$1"
    echo "KVM_CASE $1 $l 0"
}

# rping's REQ to madstack's listener: our REP, the kernel's RTU; we
# disconnect after a second (rping's own sends go nowhere: no QP here).
listen_case kcm_kernel_to_madstack "--hold 1000"
# madstack rejects rping's REQ with reason 28 (consumer reject).
listen_case kcm_madstack_rejects "--reject 28"
hear finished
exit 0
