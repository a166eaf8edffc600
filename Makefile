# The two commands of the README:
#   make main   build the kernel, boot the guest, run `paper` on pixel6pro
#               for original,mglru,pps (3 repetitions), write the report
#   make test   unit tests (harness and runtime) and the integration test
# Both install what they need first (scripts/setup.sh, idempotent).

PMRTB = .venv/bin/pmrtb
PYTEST = .venv/bin/python -m pytest
CARGO = $(shell command -v cargo || echo $(HOME)/.cargo/bin/cargo)
REPS ?= 3
SCHEMES ?= original,mglru,pps
OUT ?= results/main-$(shell date +%Y%m%d-%H%M%S)

.PHONY: setup main test unit-test integration-test kernel debug-kernel smoke reliability \
	pmr-reliability pmr-debug

setup:
	./scripts/setup.sh

main: setup
	$(PMRTB) run --scenario paper --profile pixel6pro --schemes $(SCHEMES) --reps $(REPS) --out $(OUT)

test: setup unit-test integration-test

unit-test:
	$(PYTEST) tests/unit -q
	cd runtime && $(CARGO) test --release --locked --quiet

integration-test:
	$(PYTEST) tests/integration -q -m integration

kernel: setup
	$(PMRTB) build-kernel

debug-kernel: setup
	$(PMRTB) build-kernel --flavour debug

smoke: setup
	$(PMRTB) run --scenario smoke --profile pixel5 --schemes $(SCHEMES) --reps 1

# Data integrity and kernel reliability under heavy swapping (README,
# "Reliability"); extra options in RELIABILITY_ARGS, e.g.
# RELIABILITY_ARGS="--toggle /sys/kernel/mm/lru_gen/enabled=n,y --toggles 20"
reliability: setup
	$(PMRTB) reliability --profile pixel5 --scheme original $(RELIABILITY_ARGS)

# PMR's reliability campaign (README, "Reliability"): vm.pmr_mode switched
# 0/1 a hundred times under heavy swapping (2, reserved, must be refused),
# on the testbed kernel; then, on the debug kernel (LOCKDEP, DEBUG_VM,
# DEBUG_LIST, KASAN), `smoke` under pps and the same run with 2 x RAM
# swapped (KASAN under TCG is slow).
PMR_TOGGLE = --toggle /proc/sys/vm/pmr_mode=0,1,2 --toggle-refused 2 --toggles 100
STAMP := $(shell date +%Y%m%d-%H%M%S)

pmr-reliability: setup
	$(PMRTB) reliability --profile pixel5 --scheme pps $(PMR_TOGGLE) $(RELIABILITY_ARGS)

pmr-debug: setup
	$(PMRTB) build-kernel --flavour debug
	$(PMRTB) run --scenario smoke --profile pixel5 --schemes pps --reps 1 --flavour debug \
		--out results/debug-smoke-$(STAMP)
	$(PMRTB) reliability --profile pixel5 --scheme pps --flavour debug $(PMR_TOGGLE) \
		--swap-factor 2 $(RELIABILITY_ARGS)
