#!/bin/busybox sh
# Helpers the VM bodies source (shipped as a program: /kvm/bin/lib.sh).
# The two VMs of run.sh with KVM_PEER_BODY (kcm.sh, kcm-peer.sh) tell each
# other where they are over TCP port 7000 on their 10.77.0.x addresses
# (busybox nc), and each reads what it was told.
MADSTACK_IP=10.77.0.1
KERNEL_IP=10.77.0.2
MADSTACK_GID=fe80::5054:ff:fe4d:4101
KERNEL_GID=fe80::5054:ff:fe4d:4102

tell() { # IP WORD: tries for up to 120 s until IP hears WORD
    n=0
    until echo "$2" | nc -w 2 "$1" 7000 2>/dev/null; do
        n=$((n + 1))
        [ $n -gt 1200 ] && { echo "KVM_ERR $1 never heard '$2'"; return 1; }
        sleep 0.1
    done
}

hear() { # WORD: waits for the other VM to say WORD
    got=$(nc -l -p 7000 < /dev/null | head -1)
    [ "$got" = "$1" ] || echo "KVM_ERR heard '$got', not '$1'"
}

wait_line() { # FILE PATTERN: up to 30 s for a line matching PATTERN
    n=0
    until grep -q "$2" "$1" 2>/dev/null; do
        n=$((n + 1))
        [ $n -gt 300 ] && { echo "KVM_ERR no '$2' in $1"; return 1; }
        sleep 0.1
    done
}
