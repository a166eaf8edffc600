#!/bin/sh
# Session 28, A/B 2: pmr on 27 patches vs 26, interleaved
cd /work/main
IMG=build/kernel/obj-testbed/arch/x86/boot/bzImage
run() { # kernel scheme tag
  cp /work/variants/bzImage.$1 $IMG
  echo "=== $(date +%T) $3 start"
  .venv/bin/pmrtb run --scenario paper --profile pixel6pro --schemes $2 --reps 1 --out /work/exp/s28/$3 > /work/exp/s28/$3.log 2>&1
  echo "=== $(date +%T) $3 rc=$?"
}
run p27 pmr p27-1; run final26 pmr p26-4; run p27 pmr p27-2; run final26 pmr p26-5; run p27 pmr p27-3
cp /work/variants/bzImage.p27 $IMG
echo "=== $(date +%T) done"
