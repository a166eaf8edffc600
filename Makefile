# The two commands of the README:
#   make main   build the kernel, boot the guest, run `paper` on pixel6pro
#               for original,mglru,pps,pmr (3 repetitions), write the report
#   make test   unit tests (harness and runtime) and the integration test
# Both install what they need first (scripts/setup.sh, idempotent).

PMRTB = .venv/bin/pmrtb
PYTEST = .venv/bin/python -m pytest
CARGO = $(shell command -v cargo || echo $(HOME)/.cargo/bin/cargo)
REPS ?= 3
SCHEMES ?= original,mglru,pps,pmr
OUT ?= results/main-$(shell date +%Y%m%d-%H%M%S)

.PHONY: setup main test lint unit-test integration-test kernel debug-kernel smoke reliability \
	pmr-reliability pmr-faults pmr-debug kswapd-threads-reliability acclaim-reliability \
	ice-debug swam-debug swam-reliability debug-probes unit-sweep paper paper-quick \
	paper-thorough schemas

setup:
	./scripts/setup.sh

main: setup
	$(PMRTB) run --scenario paper --profile pixel6pro --schemes $(SCHEMES) --reps $(REPS) --out $(OUT)

test: setup lint unit-test integration-test

# ruff (lint and format), mypy on the harness, clippy and rustfmt on the runtime
lint: setup
	.venv/bin/ruff check harness tests scripts
	.venv/bin/ruff format --check harness tests scripts
	.venv/bin/mypy harness/pmr_testbed
	cd runtime && $(CARGO) fmt --check
	cd runtime && $(CARGO) clippy --release --locked --all-targets -- -D warnings

# the JSON Schemas of the guest's spec files, from the runtime's types (its
# tests fail while schemas/ differs from them)
schemas: setup
	cd runtime && $(CARGO) run --release --locked --quiet -- schema spec > ../schemas/spec.schema.json
	cd runtime && $(CARGO) run --release --locked --quiet -- schema reliability-spec \
		> ../schemas/reliability-spec.schema.json

unit-test:
	$(PYTEST) tests/unit -q
	cd runtime && $(CARGO) test --release --locked --quiet

integration-test:
	$(PYTEST) tests/integration -q -m integration --durations=10

kernel: setup
	$(PMRTB) build-kernel

debug-kernel: setup
	$(PMRTB) build-kernel --flavour debug

smoke: setup
	$(PMRTB) run --scenario smoke --profile pixel5 --schemes $(SCHEMES) --reps 1

# Data integrity and kernel reliability under heavy swapping
# (docs/reliability.md); extra options in RELIABILITY_ARGS, e.g.
# RELIABILITY_ARGS="--toggle /sys/kernel/mm/lru_gen/enabled=n,y --toggles 20"
reliability: setup
	$(PMRTB) reliability --profile pixel5 --scheme original $(RELIABILITY_ARGS)

# PMR's reliability campaign (docs/reliability.md): pmr/enabled switched
# 0/1/2 a hundred times under heavy swapping (3 is not a mode and must be
# refused) on the testbed kernel, starting from pmr (mode 2); pmr-faults
# runs pmr on a swap device that runs full and on one that fails writes;
# pmr-debug runs, on the debug kernel (LOCKDEP, DEBUG_VM, DEBUG_LIST,
# KASAN), `smoke` under pps and pmr, the toggling run with 2 x RAM
# swapped (KASAN under TCG is slow) and DEBUG_PROBES, every probe.
DEBUG_PROBES = zygote-batches lru-gen-off-window used-victims-fallback removed-memcg-reclaim \
	file-victims-without-swap v1-memsw-file-victims touched-victims swap-cached-victims \
	ice-refault-freeze ice-frozen-first swam-clean-floors swam-swap-clean
PMR_TOGGLE = --toggle /sys/kernel/mm/pmr/enabled=0,1,2,3 --toggle-refused 3 --toggles 100
STAMP := $(shell date +%Y%m%d-%H%M%S)

pmr-reliability: setup
	$(PMRTB) reliability --profile pixel5 --scheme pmr $(PMR_TOGGLE) $(RELIABILITY_ARGS)

pmr-faults: setup
	$(PMRTB) reliability --profile pixel5 --scheme pmr --swap-full $(PMR_TOGGLE) $(RELIABILITY_ARGS)
	$(PMRTB) reliability --profile pixel5 --scheme pmr --swap-write-errors $(PMR_TOGGLE) \
		$(RELIABILITY_ARGS)

pmr-debug: setup
	$(PMRTB) build-kernel --flavour debug
	$(PMRTB) run --scenario smoke --profile pixel5 --schemes pps,pmr --reps 1 --flavour debug \
		--out results/debug-smoke-$(STAMP)
	$(PMRTB) reliability --profile pixel5 --scheme pmr --flavour debug $(PMR_TOGGLE) \
		--swap-factor 2 $(RELIABILITY_ARGS)
	$(MAKE) debug-probes STAMP=$(STAMP)

# The kswapd-threads baseline (kernel/baselines/kswapd-threads): its knob
# switched between 1, 2 and 4 threads under heavy swapping (0 and 17 are
# out of range and must be refused), then on the debug kernel `smoke` and
# the same toggling with 2 x RAM swapped.
KSWAPD_TOGGLE = --toggle /proc/sys/vm/kswapd_threads=1,4,2,0,17 --toggle-refused 0,17 \
	--toggles 100

kswapd-threads-reliability: setup
	$(PMRTB) reliability --profile pixel5 --scheme kswapd-threads $(KSWAPD_TOGGLE) \
		$(RELIABILITY_ARGS)
	$(PMRTB) build-kernel --flavour debug
	$(PMRTB) run --scenario smoke --profile pixel5 --schemes kswapd-threads --reps 1 \
		--flavour debug --out results/debug-smoke-kswapd-threads-$(STAMP)
	$(PMRTB) reliability --profile pixel5 --scheme kswapd-threads --flavour debug \
		$(KSWAPD_TOGGLE) --swap-factor 2 $(RELIABILITY_ARGS)

# The Acclaim baseline (kernel/baselines/acclaim) under acclaim+pmr: the
# background mark of the checkers' parent cgroup flipped under heavy
# swapping (2 is not a mark and must be refused), then on the debug kernel
# `smoke` under acclaim and acclaim+pmr and the same toggling with 2 x RAM
# swapped.
ACCLAIM_TOGGLE = --toggle /sys/fs/cgroup/pmr/reliability/memory.acclaim_bg=0,1,2 \
	--toggle-refused 2 --toggles 100

acclaim-reliability: setup
	$(PMRTB) reliability --profile pixel5 --scheme acclaim+pmr $(ACCLAIM_TOGGLE) \
		$(RELIABILITY_ARGS)
	$(PMRTB) build-kernel --flavour debug
	$(PMRTB) run --scenario smoke --profile pixel5 --schemes acclaim,acclaim+pmr --reps 1 \
		--flavour debug --out results/debug-smoke-acclaim-$(STAMP)
	$(PMRTB) reliability --profile pixel5 --scheme acclaim+pmr --flavour debug \
		$(ACCLAIM_TOGGLE) --swap-factor 2 $(RELIABILITY_ARGS)

# The Ice baseline (kernel/baselines/ice) on the debug kernel: `ice-smoke`
# under ice, ice-plus and ice-plus+pmr (freezing, thawing, frozen-first
# reclaim), then its two probes. The runs fail on a splat or an app left
# frozen.
ice-debug: setup
	$(PMRTB) build-kernel --flavour debug
	$(PMRTB) run --scenario ice-smoke --profile pixel5-zram --schemes ice,ice-plus,ice-plus+pmr \
		--reps 1 --flavour debug --out results/debug-ice-smoke-$(STAMP)
	rc=0; for p in ice-refault-freeze ice-frozen-first; do \
		$(PMRTB) probe $$p 2 --flavour debug --out results/debug-probe-$$p-$(STAMP) || rc=1; \
	done; exit $$rc

# The SWAM baseline on the debug kernel: `smoke` under swam and swam+pmr
# on the two-tier profile (working-set floors, zram above the flash),
# `swam-smoke` on pixel5, whose pressure makes the daemon add swap files,
# lmkd swap-clean the apps' shared objects' data and EOOM kill, then its
# two probes.
swam-debug: setup
	$(PMRTB) build-kernel --flavour debug
	$(PMRTB) run --scenario smoke --profile pixel6pro-swam --schemes swam,swam+pmr \
		--reps 1 --flavour debug --out results/debug-swam-smoke-$(STAMP)
	$(PMRTB) run --scenario swam-smoke --profile pixel5 --schemes swam,swam+pmr \
		--reps 1 --flavour debug --out results/debug-swam-clean-$(STAMP)
	$(PMRTB) probe swam-clean-floors 2 --flavour debug --out results/debug-probe-swam-clean-floors-$(STAMP)
	$(PMRTB) probe swam-swap-clean 2 --flavour debug --out results/debug-probe-swam-swap-clean-$(STAMP)

# The SWAM baseline's floors under heavy swapping on the two-tier profile:
# the checked pages go to zram first and to the flash disk beyond it
# (check swap_tiers), while vm.clean_min_kbytes switches between none and
# 256 MB (below it no file page is scanned), under original and pmr.
SWAM_TOGGLE = --toggle /proc/sys/vm/clean_min_kbytes=0,262144 --toggles 40

swam-reliability: setup
	$(PMRTB) reliability --profile pixel6pro-swam --scheme original $(SWAM_TOGGLE) \
		$(RELIABILITY_ARGS)
	$(PMRTB) reliability --profile pixel6pro-swam --scheme pmr $(SWAM_TOGGLE) \
		$(RELIABILITY_ARGS)

# Every probe of DEBUG_PROBES runs; the target fails if any did not pass.
debug-probes: setup
	$(PMRTB) build-kernel --flavour debug
	rc=0; for p in $(DEBUG_PROBES); do \
		$(PMRTB) probe $$p 2 --flavour debug --out results/debug-probe-$$p-$(STAMP) || rc=1; \
	done; exit $$rc

# The unmap unit against reclaim throughput (paper Fig. 15b) on one
# profile: `paper` with SWEEP_ROUNDS rounds, pmr at each unit in turn.
SWEEP_PROFILE ?= pixel6pro
SWEEP_UNITS ?= 64 256 1024 4096 16384
SWEEP_ROUNDS ?= 4
SWEEP_REPS ?= 1
comma := ,
empty :=
space := $(empty) $(empty)

unit-sweep: setup
	$(PMRTB) run --scenario paper --profile $(SWEEP_PROFILE) --rounds $(SWEEP_ROUNDS) \
		--reps $(SWEEP_REPS) --out results/unit-sweep-$(SWEEP_PROFILE)-$(STAMP) \
		--schemes $(subst $(space),$(comma),$(foreach u,$(SWEEP_UNITS),pmr@unmap_unit_kbytes=$(u)))

# The paper's whole evaluation (§3.2, §5) into one directory with one
# report, PAPER_OUT/paper.md (`pmrtb paper`, harness/pmr_testbed/config/paper.py):
# campaigns main, devices, delta (Fig. 15a), unit-<profile> (Fig. 15b) and
# floor (no memory pressure). The time each takes on a 2-core TCG host is
# printed first:
#   make paper           ~1 h: main (original, mglru, acclaim, pmr) at
#                        REPS (>= 3) x 10 rounds; devices 1 rep x 2 rounds;
#                        the sweeps 1 rep x 2 rounds at three points each;
#                        floor 1 x 2
#   make paper-quick     ~12 min: original, acclaim and pmr, main 5 rounds,
#                        the others 1, no sweeps: the regime and pmr's direction
#   make paper-thorough  ~4.5 h: everything at REPS, every scheme, every sweep
#                        point on both profiles, and `floor`
# Each continues a cut-off run when given its directory again:
#   make paper PAPER_OUT=results/paper-20260101-120000
PAPER_OUT ?= results/paper-$(STAMP)
PAPER_QUICK_OUT ?= results/paper-quick-$(STAMP)
PAPER_THOROUGH_OUT ?= results/paper-thorough-$(STAMP)
SEED ?= 1

paper: setup
	$(PMRTB) paper --out $(PAPER_OUT) --reps $(REPS) --seed $(SEED)

paper-thorough: setup
	$(PMRTB) paper --out $(PAPER_THOROUGH_OUT) --thorough --reps $(REPS) --seed $(SEED)

paper-quick: setup
	$(PMRTB) paper --out $(PAPER_QUICK_OUT) --quick --seed $(SEED)
