#!/bin/busybox sh
# infiniband-diags' ibstat / ibstatus and madstack's `mad` on the VM's two
# soft-RoCE devices (run by tests/kvm/run.sh; tools/tests/kernel_vm_diags.rs
# boots it and compares), then madstack's CM cases (cm.sh). Each command
# prints between "KVM_BEGIN name" and "KVM_CASE name <diags rc> <mad rc>",
# its lines prefixed "diags: " / "mad: ".
set -u
OUT=/kvm/out
for cmd in "ibstat" "ibstat rxe0" "ibstat rxe1 1" "ibstat -l" "ibstat -p" "ibstat -s" "ibstat rxe9" "ibstat rxe0 2" "ibstatus" "ibstatus rxe1:1"; do
    name=$(echo "$cmd" | tr ' :' '__')
    echo "KVM_BEGIN diags_$name"
    $cmd > "$OUT/$name.diags" 2>&1; d=$?
    mad $cmd > "$OUT/$name.mad" 2>&1; m=$?
    sed "s/^/diags: /" "$OUT/$name.diags"
    sed "s/^/mad: /" "$OUT/$name.mad"
    echo "KVM_CASE diags_$name $d $m"
done

# madstack's CM between rxe0 and rxe1, in the same boot (tests/kvm/cm.sh).
cm.sh

exit 0
