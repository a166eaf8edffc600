"""Where the reclaim threads' CPU time goes: perf in the guest (`pmrtb run
--perf-hz N`).

The guest runs the workload under `perf record -a -g` (the host's perf,
which the guest sees through the read-only root), sampling the CPU clock
(TCG has no PMU) into the run's `perf.data`. Once the guest is down, the
host reads it against the kernel's `vmlinux` and writes `perf-reclaim.txt`:
for each reclaim thread, the share of its samples each kernel function was
running in (self) and was on the stack for (total). The CPU clock cannot
interrupt code that runs with interrupts off: time under the LRU lock shows
as the unlock's. Sampling slows the guest, so profiled runs explain a
comparison, they do not belong in one.

A thread's samples are also split by path: those with `take_victims` on the
stack (reclaim writing back the victims kshrinkd prepared) and the rest
(its own scan of the LRU lists, and everything else), each with the share
of the thread's samples in the costly steps of reclaim (the reference
check, unmapping, the page-out), so that a profile tells the victims'
second reference check from the LRU scan's first.

The samples that landed on the release of an interrupts-off lock (time
spent under it, see above) are also counted by the function that released
it, the first caller on the stack that is not a lock helper: that names the
critical sections (isolating from the LRU lists, putting folios back,
swap-slot allocation...) whose time the unlock's share hides.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from ..config.spec import RECLAIM_THREADS
from ..errors import UserError

PERF_DATA = "perf.data"
REPORT = "perf-reclaim.txt"
MAX_HZ = 1000
# Below this share of a thread's samples, a function is left out.
PERCENT_LIMIT = 0.5
# The function whose presence on the stack puts a sample on the victims'
# path. A static function of mm/vmscan.c: were the compiler to inline it,
# the victims' path would show 0% and its samples would count as the rest.
VICTIM_PATH = "take_victims"
# The steps of reclaim whose share the split by path gives
STEPS = {"reference check": "folio_referenced", "unmap": "try_to_unmap", "page-out": "pageout"}
# The releases of interrupts-off locks, where the time under them shows
IRQ_UNLOCKS = ("_raw_spin_unlock_irq", "_raw_spin_unlock_irqrestore")
# Wrappers between a critical section and the unlock, skipped to name it
# (inline in 6.1, so on a stack only if the compiler kept them out of line)
LOCK_HELPERS = (
    "spin_unlock_irq",
    "spin_unlock_irqrestore",
    "unlock_page_lruvec_irq",
    "unlock_page_lruvec_irqrestore",
)


def check(hz: int) -> None:
    """A valid --perf-hz (0: off) and, if on, perf on the host."""
    if not 0 <= hz <= MAX_HZ:
        raise UserError(f"--perf-hz must be 0 (off) to {MAX_HZ}, got {hz}")
    if hz and not shutil.which("perf"):
        raise UserError("perf not found: run `make setup` (Debian package linux-perf)")


def wrap(cmd: str, run_dir: Path, hz: int) -> str:
    """`cmd` under perf record, which exits with cmd's status."""
    if not hz:
        return cmd
    perf = shutil.which("perf") or "perf"
    return (
        f"{perf} record -q -a -g -e cpu-clock -F {hz} --no-buildid --no-buildid-cache "
        f"-o {run_dir / PERF_DATA} -- {cmd}"
    )


def _stacks(perf_data: Path, vmlinux: Path) -> Iterator[tuple[str, list[str]]]:
    """(thread name, functions from the sampled one to the outermost) per sample."""
    out = subprocess.run(
        [
            "perf",
            "script",
            "-i",
            str(perf_data),
            "--vmlinux",
            str(vmlinux),
            "-F",
            "comm,tid,ip,sym",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for block in out.split("\n\n"):
        lines = block.strip("\n").splitlines()
        if not lines or not lines[0].strip():
            continue
        comm = lines[0].rsplit(None, 1)[0].strip()
        # "\t<address> <symbol>"; perf writes [unknown] where it has none
        yield comm, [ln.split(None, 1)[-1] for ln in lines[1:]]


def profile(perf_data: Path, vmlinux: Path) -> dict:
    """Per reclaim thread: samples, per function the samples it was running
    in (self) and on the stack of (total), and per path (`victims` or
    `rest`) its samples and, in `steps`, those of each of STEPS on it; in
    `irq_off`, the samples on one of IRQ_UNLOCKS by the function that
    released the lock."""
    threads: dict[str, dict] = {}
    for comm, stack in _stacks(perf_data, vmlinux):
        if not comm.startswith(tuple(RECLAIM_THREADS)):
            continue
        t = threads.setdefault(
            comm,
            {
                "samples": 0,
                "self": Counter(),
                "total": Counter(),
                "irq_off": Counter(),
                "paths": {p: {"samples": 0, "steps": Counter()} for p in ("victims", "rest")},
            },
        )
        t["samples"] += 1
        if stack:
            t["self"][stack[0]] += 1
            if stack[0] in IRQ_UNLOCKS:
                t["irq_off"][_releaser(stack)] += 1
        on_stack = set(stack)
        t["total"].update(on_stack)
        path = t["paths"]["victims" if VICTIM_PATH in on_stack else "rest"]
        path["samples"] += 1
        path["steps"].update(step for step, fn in STEPS.items() if fn in on_stack)
    return threads


def _releaser(stack: list[str]) -> str:
    """The function that released the lock a sample landed on the release of."""
    for fn in stack[1:]:
        if fn not in LOCK_HELPERS:
            return fn
    return "[unknown]"


def _paths(paths: dict[str, dict], samples: int) -> list[str]:
    def pct(n: int) -> str:
        return f"{100 * n / samples:5.1f}%"

    names = {"victims": f"taking victims ({VICTIM_PATH})", "rest": "the rest"}
    return [
        f"  {pct(c['samples'])}  {names[path]}: "
        + ", ".join(f"{step} {pct(c['steps'][step]).strip()}" for step in STEPS)
        for path, c in paths.items()
    ]


def _table(counts: Counter, samples: int) -> list[str]:
    return [
        f"  {100 * n / samples:5.1f}%  {fn}"
        for fn, n in counts.most_common()
        if 100 * n / samples >= PERCENT_LIMIT
    ]


def report(run_dir: Path, vmlinux: Path) -> Path | None:
    """Write perf-reclaim.txt from the run's perf.data, if there is one."""
    perf_data = run_dir / PERF_DATA
    if not perf_data.exists():
        return None
    out = run_dir / REPORT
    try:
        threads = profile(perf_data, vmlinux)
    except subprocess.CalledProcessError as exc:
        # The run's results stand without it: say why there is no profile.
        out.write_text(
            f"perf script failed (status {exc.returncode}): {(exc.stderr or '').strip()[-500:]}\n"
        )
        return out
    parts = []
    for comm, t in sorted(threads.items()):
        parts += [
            f"{comm}: {t['samples']} samples",
            "self (the function running):",
            *_table(t["self"], t["samples"]),
            "total (the function or its callees running):",
            *_table(t["total"], t["samples"]),
            "by path (share of all the thread's samples):",
            *_paths(t["paths"], t["samples"]),
            "interrupts off, by the function releasing the lock "
            "(share of all the thread's samples):",
            *_table(t["irq_off"], t["samples"]),
            "",
        ]
    out.write_text("\n".join(parts) + "\n" if parts else "no samples from the reclaim threads\n")
    return out
