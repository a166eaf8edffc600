#!/bin/sh
# Session 28's A/B campaigns: one `pmrtb run --reps 1` per argument,
# KERNEL:SCHEME:TAG, in order, with /work/variants/bzImage.KERNEL copied
# over the testbed image first (pmrtb run builds no kernel while
# kernel/patches is unchanged); output in /work/exp/s28/TAG. As run:
#
#   ab.sh p25:pmr:p25-1 final26:pmr:p26-1 final26:original:orig-1 \
#         final26:pmr:p26-2 final26:original:orig-2 p25:pmr:p25-2 \
#         final26:original:orig-3 p25:pmr:p25-3 final26:pmr:p26-3      # §1
#   ab.sh p27:pmr:p27-1 final26:pmr:p26-4 p27:pmr:p27-2 \
#         final26:pmr:p26-5 p27:pmr:p27-3                              # §2
#
# (p25, final26 and p27: the 25- and 26-patch series and the patch not
# kept on top of 26.) The testbed image is the last KERNEL's afterwards:
# rebuild it (`pmrtb build-kernel`) or copy the series' image back.
cd /work/main
IMG=build/kernel/obj-testbed/arch/x86/boot/bzImage
for run in "$@"; do
  IFS=: read -r kernel scheme tag <<EOT
$run
EOT
  cp "/work/variants/bzImage.$kernel" "$IMG"
  echo "=== $(date +%T) $tag start"
  .venv/bin/pmrtb run --scenario paper --profile pixel6pro --schemes "$scheme" --reps 1 \
    --out "/work/exp/s28/$tag" > "/work/exp/s28/$tag.log" 2>&1
  echo "=== $(date +%T) $tag rc=$?"
done
