#!/usr/bin/env bash
# Builds the kernel VM's base image for madstack's real-kernel tests:
# Debian's stock kernel (unpacked from its .deb, never installed), and a
# busybox initramfs with the RDMA modules (rdma_rxe, ib_umad, ib_uverbs),
# iproute2's `ip` / `rdma` / `tc` (with sch_netem), the C peer `kpeer` (libibumad, the kernel's RMPP),
# infiniband-diags' ibstat / ibstatus for comparison, and the kernel's CM
# modules with librdmacm's rping (loaded only by the kernel-peer VM).
#
#   tests/kvm/build.sh [DIR]     (DIR defaults to $MADSTACK_KVM_DIR, else target/kvm)
#
# Output: DIR/vmlinuz, DIR/base.cpio.gz, DIR/kernel-version. Rebuilds only
# when an input script is newer than the output. Installs the Debian
# packages it needs when missing (as root or through sudo).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DIR="${1:-${MADSTACK_KVM_DIR:-$ROOT/target/kvm}}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"
    else echo "kvm/build.sh: need root or sudo for: $*" >&2; return 1; fi
}

fresh=1
for f in vmlinuz base.cpio.gz; do [ -s "$DIR/$f" ] || fresh=0; done
for s in build.sh init.sh kpeer.c; do
    [ "$fresh" = 1 ] && [ "$HERE/$s" -nt "$DIR/base.cpio.gz" ] && fresh=0
done
if [ "$fresh" = 1 ]; then
    echo "kvm/build.sh: base image in $DIR is up to date"
    exit 0
fi

PKGS=(qemu-system-x86 busybox-static libibumad-dev libibumad3 libibverbs1 ibverbs-providers
      infiniband-diags iproute2 kmod cpio gcc libc6-dev rdmacm-utils librdmacm1)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "kvm/build.sh: installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

cd "$DIR"
# The stock kernel the metapackage points at, downloaded (not installed: the
# host's own kernel and boot loader are left alone) and unpacked.
# (awk reads to the end in these pipelines: an awk that exits at its first
# match can kill the writer with SIGPIPE, which pipefail makes a silent
# failure of the whole script, as seen under load.)
kpkg() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ && !k {k = $2} END {if (k) print k}'; }
KPKG="${KPKG:-$(kpkg)}"
if [ -z "$KPKG" ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    KPKG="$(kpkg)"
fi
[ -n "$KPKG" ] || { echo "kvm/build.sh: cannot find the kernel package behind linux-image-amd64" >&2; exit 1; }
mkdir -p debs
if ! ls debs/"${KPKG}"_*.deb >/dev/null 2>&1; then
    (cd debs && apt-get download "$KPKG")
fi
rm -rf kroot && mkdir kroot
dpkg-deb -x debs/"${KPKG}"_*.deb kroot
KV="$(ls kroot/lib/modules | head -1)"
depmod -b kroot "$KV"

R="$DIR/initramfs"
rm -rf "$R"
mkdir -p "$R"/{bin,sbin,dev,proc,sys,tmp,etc,root,lib/modules,usr/bin,usr/sbin,lib64,lib/x86_64-linux-gnu}
cp /bin/busybox "$R/bin/busybox"
ln -s busybox "$R/bin/sh"

# Modules, in load order. crc32_generic is needed by rdma_rxe but is not a
# modinfo dependency of it.
MODULES="crc32_generic udp_tunnel ip6_udp_tunnel ib_core ib_uverbs ib_umad rdma_rxe veth e1000 sch_netem"
# The kernel's own CM, for the VM that plays the kernel peer: copied, not
# loaded at boot (it would own class 0x07 on every device), in this order.
CM_MODULES="configfs ib_cm iw_cm rdma_cm rdma_ucm"
copy_modules() { # ORDER-FILE MODULE...: copies the modules; each dependency must be one of them
    local order="$1"; shift
    for m in "$@"; do
        cp "$(modinfo -b kroot -k "$KV" -n "$m")" "$R/lib/modules/$m.ko"
    done
    for m in "$@"; do
        modprobe -d kroot -S "$KV" --show-depends "$m"
    done | awk '$1 == "insmod" {print $2}' | xargs -n1 basename | sed 's/\.ko.*//' | sort -u |
    while read -r d; do
        [ -e "$R/lib/modules/$d.ko" ] || { echo "kvm/build.sh: module $d is missing from the load list" >&2; exit 1; }
    done || exit 1
    echo "$*" > "$R/lib/modules/$order"
}
# shellcheck disable=SC2086
copy_modules order $MODULES
# shellcheck disable=SC2086
copy_modules cm-order $CM_MODULES

copy_elf() { # file [dest]: copies an ELF file and every library ldd resolves for it
    local src="$1" dst="${2:-$1}"
    mkdir -p "$R$(dirname "$dst")"
    cp -L "$src" "$R$dst"
    ldd "$src" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' |
    while read -r l; do
        [ -e "$R$l" ] || { mkdir -p "$R$(dirname "$l")"; cp -L "$l" "$R$l"; }
    done
}
# busybox's own `ip` cannot make veth pairs: iproute2's, by absolute path.
copy_elf /bin/ip /usr/sbin/ip
copy_elf /usr/bin/rdma /usr/sbin/rdma
# iproute2's tc: netem delays make CM races certain (cm.sh).
copy_elf /usr/sbin/tc /usr/sbin/tc
# infiniband-diags' ibstat (libibmad, libibumad) and the ibstatus script.
copy_elf /usr/sbin/ibstat /usr/sbin/ibstat
cp /usr/sbin/ibstatus "$R/usr/sbin/ibstatus"
# libibumad / libibverbs and the rxe verbs provider, which madstack loads at
# run time (dlopen: ldd does not see them).
for so in libibumad.so.3 libibverbs.so.1; do
    p="$(ldconfig -p | awk -v n="$so" '$1 == n && /x86-64/ && !p {p = $NF} END {if (p) print p}')"
    [ -n "$p" ] || { echo "kvm/build.sh: $so not found" >&2; exit 1; }
    copy_elf "$p" "/lib/x86_64-linux-gnu/$so"
done
copy_elf /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
# librdmacm's rping, the kernel CM's user in the kernel-peer VM.
copy_elf /usr/bin/rping /usr/bin/rping
mkdir -p "$R/etc/libibverbs.d"
cp /etc/libibverbs.d/rxe.driver "$R/etc/libibverbs.d/"
cp -L /lib64/ld-linux-x86-64.so.2 "$R/lib64/"
# The C peer: the kernel's own RMPP through libibumad (static).
gcc -O2 -Wall -Werror -static -o "$R/usr/bin/kpeer" "$HERE/kpeer.c" -libumad
# glibc needs a few /etc files (NSS from files only).
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$R/etc/passwd"
printf 'root:x:0:\n' > "$R/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files\n' > "$R/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n' > "$R/etc/hosts"
cp "$HERE/init.sh" "$R/init"
chmod +x "$R/init"
cp kroot/boot/vmlinuz-"$KV" vmlinuz.new
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) > base.cpio.gz.new
mv vmlinuz.new vmlinuz
mv base.cpio.gz.new base.cpio.gz
echo "$KV" > kernel-version
rm -rf kroot "$R"
echo "kvm/build.sh: kernel $KV, base image $(du -h base.cpio.gz | cut -f1) in $DIR"
