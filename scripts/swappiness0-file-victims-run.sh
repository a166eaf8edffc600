#!/bin/sh
# Boot KERNEL (default: the testbed kernel) under TCG with a swap and a data
# disk and run swappiness0-file-victims.sh in it with vm.pmr_mode MODE
# (default 1); the guest's findings go to OUT/guest.log.
#
#   scripts/swappiness0-file-victims-run.sh OUT [MODE] [KERNEL]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
mode=${2:-1}
kernel=${3:-$root/build/kernel/obj-testbed/arch/x86/boot/bzImage}
disks=$(mktemp -d /var/tmp/swappiness0.XXXXXX)
trap 'rm -rf "$disks"' EXIT
truncate -s 1G "$disks/swap.img"
truncate -s 512M "$disks/data.img"
rm -f "$out/guest.log"
PATH=$root/.venv/bin:$PATH
timeout 900 vng --run "$kernel" --disable-microvm --disable-kvm --cpus 2 --memory 512M \
	--cwd "$root" --rwdir "$out" --append tsc=reliable \
	--qemu-opts="-drive file=$disks/swap.img,if=none,id=swap,format=raw \
-device virtio-blk-pci,drive=swap -drive file=$disks/data.img,if=none,id=data,format=raw \
-device virtio-blk-pci,drive=data" \
	--exec "sh $root/scripts/swappiness0-file-victims.sh $out $mode"
