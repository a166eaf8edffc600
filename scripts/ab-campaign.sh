#!/bin/sh
# Interleaved A/B campaigns of kernel variants: one `pmrtb run --reps 1`
# per KERNEL:SCHEME:TAG argument, in order, with $VARIANTS/bzImage.KERNEL
# copied over the testbed image first (pmrtb run builds no kernel while
# kernel/patches is unchanged); each run's output in OUTDIR/TAG, its log in
# OUTDIR/TAG.log. Runs one after the other on the same day interleave the
# kernels, so that drift of the host hits them alike. VARIANTS is the
# directory of the kernel images, relative to the repository if not
# absolute (default build/variants).
#
#   [VARIANTS=DIR] scripts/ab-campaign.sh OUTDIR KERNEL:SCHEME:TAG...
#
# The testbed image is the last KERNEL's afterwards, and `make kernel` does
# not notice: put the series' image back (docs/kernel-workflow.md).
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 OUTDIR KERNEL:SCHEME:TAG..." >&2
  exit 2
fi
out=$(realpath -m "$1")   # before the cd below
shift
cd "$(dirname "$0")/.." || exit 1
IMG=build/kernel/obj-testbed/arch/x86/boot/bzImage
VARIANTS=${VARIANTS:-build/variants}
for run in "$@"; do
  IFS=: read -r kernel scheme tag <<EOT
$run
EOT
  if [ -z "$kernel" ] || [ -z "$scheme" ] || [ -z "$tag" ]; then
    echo "bad run '$run': give KERNEL:SCHEME:TAG, e.g. series:pmr:base-1" >&2
    exit 2
  fi
  if [ ! -f "$VARIANTS/bzImage.$kernel" ]; then
    echo "no kernel image $VARIANTS/bzImage.$kernel: build the variant and copy it there" >&2
    exit 2
  fi
done
mkdir -p "$out"
rc=0
for run in "$@"; do
  IFS=: read -r kernel scheme tag <<EOT
$run
EOT
  cp "$VARIANTS/bzImage.$kernel" "$IMG"
  echo "=== $(date +%T) $tag start"
  .venv/bin/pmrtb run --scenario paper --profile pixel6pro --schemes "$scheme" --reps 1 \
    --out "$out/$tag" > "$out/$tag.log" 2>&1
  status=$?
  [ $status -eq 0 ] || rc=1
  echo "=== $(date +%T) $tag rc=$status"
done
exit $rc
