"""The host's CPU while a guest runs: did the emulator have the cores?

Under TCG each of the guest's vCPUs is a host thread, and QEMU's main
thread (device emulation: the virtio disks, the 9p root, timers) needs a
core too: three busy threads on a 2-core host. A launch that waits for a
CPU in the guest (schedstat's run_delay) may be waiting for the host
rather than for the guest's other tasks; this file tells the two apart.

`HostCpuSampler` runs beside a boot (guest.py) and writes `host_cpu.csv`
next to the console, one line per SAMPLE_S seconds, each figure in CPUs
(seconds of CPU per second) over the interval that ends at `t_unix`:

  t_unix      host wall clock, s (the guest's `started_at` is on the same
              clock, to within a second: the guest reads it from the RTC)
  host_cpus   the host's CPU count
  busy        the whole host: /proc/stat's time outside idle and iowait
  vcpus       QEMU's vCPU threads (named "CPU <n>/<accel>": vng_command asks
              QEMU for thread names)
  main        QEMU's main thread (device emulation, the big QEMU lock)
  other       QEMU's other threads (I/O workers, RCU)

`host_cpu_figures` turns the file into a run's `host_cpu` figures, over the
workload (`started_at` to `started_at + workload_s`) and over its cold
switches, each from `t_ms - response_ms` to `t_ms` (samples whose interval
overlaps a switch count for it): mean busy, vcpus and main, and
`saturated_share`, the share of the workload's samples with the host busy
within SATURATED_MARGIN of all its CPUs.
"""

from __future__ import annotations

import csv
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

HOST_CPU_FILE = "host_cpu.csv"
SAMPLE_S = 1.0
SATURATED_MARGIN = 0.1
COLUMNS = ("t_unix", "host_cpus", "busy", "vcpus", "main", "other")
# /proc/stat's cpu line: user nice system idle iowait irq softirq steal ...
_IDLE_FIELDS = (3, 4)
_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_ticks(proc: Path) -> tuple[int, int]:
    """(busy, total) jiffies of the host from /proc/stat's first line."""
    fields = [int(x) for x in (proc / "stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = sum(fields[i] for i in _IDLE_FIELDS)
    return sum(fields) - idle, sum(fields)


def _qemu_pid(proc: Path, session: int) -> int | None:
    """The QEMU process of the boot whose process group is `session`."""
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        pgrp = int(stat[stat.rindex(")") + 2:].split()[2])
        if pgrp == session and comm.startswith("qemu-system"):
            return int(entry.name)
    return None


def _thread_ticks(proc: Path, pid: int) -> dict[str, int]:
    """utime + stime of each thread of `pid`, by kind: vcpus, main, other."""
    kinds = {"vcpus": 0, "main": 0, "other": 0}
    try:
        tids = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return kinds
    for task in tids:
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        ticks = int(fields[11]) + int(fields[12])
        kind = ("main" if task.name == str(pid)
                else "vcpus" if comm.startswith("CPU ") else "other")
        kinds[kind] += ticks
    return kinds


@dataclass(frozen=True)
class Snapshot:
    """The host's and a QEMU process's CPU counters at one time."""
    t_unix: float
    busy_ticks: int
    total_ticks: int
    qemu_ticks: dict[str, int] | None    # by kind; None before QEMU started


def snapshot(proc: Path, pid: int | None) -> Snapshot:
    return Snapshot(time.time(), *_stat_ticks(proc), _thread_ticks(proc, pid) if pid else None)


def csv_row(last: Snapshot, now: Snapshot, ncpu: int) -> list[str] | None:
    """host_cpu.csv's line for the interval between two snapshots; None if
    either lacks QEMU or no time passed."""
    if last.qemu_ticks is None or now.qemu_ticks is None or now.total_ticks <= last.total_ticks:
        return None
    wall = now.t_unix - last.t_unix
    busy = (now.busy_ticks - last.busy_ticks) / (now.total_ticks - last.total_ticks) * ncpu
    used = {k: (now.qemu_ticks[k] - last.qemu_ticks[k]) / _TICKS / wall for k in now.qemu_ticks}
    return [f"{now.t_unix:.2f}", str(ncpu), f"{busy:.3f}", f"{used['vcpus']:.3f}",
            f"{used['main']:.3f}", f"{used['other']:.3f}"]


class HostCpuSampler:
    """Samples the host and the QEMU process of a boot into `path` until
    stop(); reading /proc costs well under 1% of a CPU at SAMPLE_S."""

    def __init__(self, session: int, path: Path, proc: Path = Path("/proc"),
                 interval_s: float = SAMPLE_S):
        self.session, self.path, self.proc, self.interval_s = session, path, proc, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> HostCpuSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5 * self.interval_s)

    def _run(self) -> None:
        try:
            self._sample()
        except (OSError, ValueError, IndexError) as e:   # /proc changed shape: stop, keep the rows
            print(f"warning: host CPU sampling stopped: {e}", file=sys.stderr)

    def _sample(self) -> None:
        ncpu = os.cpu_count() or 1
        pid = None
        with open(self.path, "w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(COLUMNS)
            last = snapshot(self.proc, pid)
            while not self._stop.wait(self.interval_s):
                pid = pid or _qemu_pid(self.proc, self.session)
                now = snapshot(self.proc, pid)
                if row := csv_row(last, now, ncpu):
                    out.writerow(row)
                    fh.flush()
                last = now


def read_host_cpu(path: Path) -> list[dict[str, float]] | None:
    """host_cpu.csv's rows as numbers; None without the file (runs before it)."""
    try:
        with open(path, newline="") as fh:
            return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(fh)]
    except FileNotFoundError:
        return None


def _mean(rows: list[dict[str, float]], key: str) -> float | None:
    return sum(r[key] for r in rows) / len(rows) if rows else None


def host_cpu_figures(rows: list[dict[str, float]] | None, started_at: float,
                     workload_s: float, switches: list[dict]) -> dict | None:
    """A run's `host_cpu` figures (module docstring); None without samples."""
    if not rows:
        return None

    def overlaps(r: dict, start: float, end: float) -> bool:
        return r["t_unix"] - SAMPLE_S < end and r["t_unix"] > start

    during = [r for r in rows if overlaps(r, started_at, started_at + workload_s)]
    if not during:
        return None
    cold = [(started_at + (s["t_ms"] - s["response_ms"]) / 1000, started_at + s["t_ms"] / 1000)
            for s in switches if s["kind"] == "cold"]
    in_cold = [r for r in during if any(overlaps(r, a, b) for a, b in cold)]
    ncpu = during[0]["host_cpus"]
    return {"host_cpus": int(ncpu), "busy": _mean(during, "busy"),
            "vcpus": _mean(during, "vcpus"), "main": _mean(during, "main"),
            "saturated_share": sum(r["busy"] >= ncpu - SATURATED_MARGIN
                                   for r in during) / len(during),
            "cold_busy": _mean(in_cold, "busy"), "cold_vcpus": _mean(in_cold, "vcpus"),
            "cold_main": _mean(in_cold, "main")}
