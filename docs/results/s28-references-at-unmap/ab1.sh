#!/bin/sh
# Session 28: interleaved A/B, pmr on 25 vs 26 patches, original on 26; rotated order
cd /work/main
IMG=build/kernel/obj-testbed/arch/x86/boot/bzImage
run() { # kernel scheme tag
  cp /work/variants/bzImage.$1 $IMG
  echo "=== $(date +%T) $3 start"
  .venv/bin/pmrtb run --scenario paper --profile pixel6pro --schemes $2 --reps 1 --out /work/exp/s28/$3 > /work/exp/s28/$3.log 2>&1
  echo "=== $(date +%T) $3 rc=$?"
}
run p25 pmr p25-1;      run final26 pmr p26-1;   run final26 original orig-1
run final26 pmr p26-2;  run final26 original orig-2; run p25 pmr p25-2
run final26 original orig-3; run p25 pmr p25-3;  run final26 pmr p26-3
cp /work/variants/bzImage.final26 $IMG
echo "=== $(date +%T) done"
