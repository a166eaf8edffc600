"""The host's CPU while a guest runs: did the emulator have the cores?

Under TCG each of the guest's vCPUs is a host thread, and QEMU's main
thread (device emulation: the virtio disks, the 9p root, timers) needs a
core too: three busy threads on a 2-core host. A launch that waits for a
CPU in the guest (schedstat's run_delay) may be waiting for the host
rather than for the guest's other tasks; this file says how often the host
had no CPU to give.

`HostCpuSampler` runs beside a boot (vm.py) and writes `host_cpu.csv`
next to the console, one line per SAMPLE_S seconds, each figure in CPUs
(seconds of CPU per second) over the interval that ends at `t_unix`:

  t_unix      host wall clock, s
  host_cpus   the host's CPU count
  busy        the whole host: /proc/stat's time outside idle and iowait
  vcpus       QEMU's vCPU threads (named "CPU <n>/<accel>": vng_command asks
              QEMU for thread names)
  main        QEMU's main thread (device emulation, the big QEMU lock)
  other       QEMU's other threads (I/O workers, RCU), those that exited
              included

`host_cpu_figures` turns the file into a run's `host_cpu` figures, over the
workload (from its start on the host's clock, metrics.py's
workload_start_unix(), for workload_s) and over its cold switches, each
from `t_ms - response_ms` to `t_ms` (samples whose interval overlaps a
switch count for it): mean busy, vcpus and main, and
`saturated_share`, the share of the workload's samples with the host busy
within SATURATED_MARGIN of all its CPUs.
"""

from __future__ import annotations

import csv
import os
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


def _comm_and_fields(stat: str) -> tuple[str, list[str]]:
    """A /proc stat line's comm and the fields after it (state first)."""
    return stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()


def _has_vcpus(pdir: Path) -> bool:
    for task in pdir.joinpath("task").iterdir():
        try:
            if _comm_and_fields((task / "stat").read_text())[0].startswith("CPU "):
                return True
        except OSError:
            continue
    return False


def _qemu_pid(proc: Path, session: int) -> int | None:
    """The QEMU process that runs the guest of the boot whose process group
    is `session`: the one with vCPU threads (virtme-ng runs `qemu
    --version` in the same group first, which has none)."""
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm, fields = _comm_and_fields((entry / "stat").read_text())
            if int(fields[2]) == session and comm.startswith("qemu-system") and _has_vcpus(entry):
                return int(entry.name)
        except (OSError, ValueError, IndexError):
            continue
    return None


def _thread_ticks(proc: Path, pid: int) -> dict[str, int] | None:
    """CPU ticks (utime + stime) of `pid`'s vCPU threads, its main thread
    and the rest: the process's total, which keeps the time of threads that
    have exited, less the other two. None once the process is gone."""
    pdir = proc / str(pid)
    vcpus = main = 0
    try:
        for task in list(pdir.joinpath("task").iterdir()):
            try:
                comm, fields = _comm_and_fields((task / "stat").read_text())
            except OSError:  # the thread exited
                continue
            ticks = int(fields[11]) + int(fields[12])
            if task.name == str(pid):
                main = ticks
            elif comm.startswith("CPU "):
                vcpus += ticks
        # read after the threads, so that it is never below their sum
        _, fields = _comm_and_fields((pdir / "stat").read_text())
    except OSError:
        return None
    return {"vcpus": vcpus, "main": main, "other": int(fields[11]) + int(fields[12]) - vcpus - main}


@dataclass(frozen=True)
class Snapshot:
    """The host's and a QEMU process's CPU counters at one time."""

    t_unix: float
    t_mono: float
    busy_ticks: int
    total_ticks: int
    qemu_ticks: dict[str, int] | None  # by kind; None without QEMU


def snapshot(proc: Path, pid: int | None) -> Snapshot:
    return Snapshot(
        time.time(), time.monotonic(), *_stat_ticks(proc), _thread_ticks(proc, pid) if pid else None
    )


def csv_row(last: Snapshot, now: Snapshot, ncpu: int) -> list[str] | None:
    """host_cpu.csv's line for the interval between two snapshots; None if
    either lacks QEMU, no time passed, or a counter went back (a vCPU
    thread that exited: QEMU shutting down)."""
    if last.qemu_ticks is None or now.qemu_ticks is None or now.total_ticks <= last.total_ticks:
        return None
    wall = now.t_mono - last.t_mono
    used = {k: (now.qemu_ticks[k] - last.qemu_ticks[k]) / _TICKS / wall for k in now.qemu_ticks}
    if wall <= 0 or min(used.values()) < 0:
        return None
    busy = (now.busy_ticks - last.busy_ticks) / (now.total_ticks - last.total_ticks) * ncpu
    return [
        f"{now.t_unix:.2f}",
        str(ncpu),
        f"{busy:.3f}",
        f"{used['vcpus']:.3f}",
        f"{used['main']:.3f}",
        f"{used['other']:.3f}",
    ]


class HostCpuSampler:
    """Samples the host and the QEMU process of a boot into `path` until
    stop(); reading /proc costs well under 1% of a CPU at SAMPLE_S. A
    sample that cannot be read is skipped."""

    def __init__(
        self, session: int, path: Path, proc: Path = Path("/proc"), interval_s: float = SAMPLE_S
    ):
        self.session, self.path, self.proc, self.interval_s = session, path, proc, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> HostCpuSampler:
        """Create the file (its header at once) and start sampling."""
        self._fh = open(self.path, "w", newline="")  # noqa: SIM115 (closed by stop())
        csv.writer(self._fh).writerow(COLUMNS)
        self._fh.flush()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5 * self.interval_s)

    def _run(self) -> None:
        # the whole host: under a cpuset or a CPU quota, "saturated" would
        # need the harness's share instead
        ncpu = os.cpu_count() or 1
        pid = None
        last = None
        delay = 0.0
        with self._fh as fh:
            out = csv.writer(fh)
            while not self._stop.wait(delay):
                delay = self.interval_s
                try:
                    pid = pid or _qemu_pid(self.proc, self.session)
                    now = snapshot(self.proc, pid)
                except (OSError, ValueError, IndexError):  # skip this one
                    continue
                if now.qemu_ticks is None:
                    pid = None  # not started yet, or gone: look again
                if last and (row := csv_row(last, now, ncpu)):
                    out.writerow(row)
                    fh.flush()
                last = now


def read_host_cpu(path: Path) -> list[dict[str, float]] | None:
    """host_cpu.csv's rows as numbers, less any malformed one (a line cut
    off when the harness was); None without the file (runs before it)."""
    try:
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
    except FileNotFoundError:
        return None
    parsed = []
    for row in rows:
        try:
            parsed.append({k: float(row[k]) for k in COLUMNS})
        except (KeyError, TypeError, ValueError):
            continue
    return parsed


def _mean(rows: list[dict[str, float]], key: str) -> float | None:
    return sum(r[key] for r in rows) / len(rows) if rows else None


def host_cpu_figures(
    rows: list[dict[str, float]] | None, started_at: float, workload_s: float, switches: list[dict]
) -> dict | None:
    """A run's `host_cpu` figures (module docstring); None without samples."""
    if not rows:
        return None

    def overlaps(r: dict, start: float, end: float) -> bool:
        return r["t_unix"] - SAMPLE_S < end and r["t_unix"] > start

    during = [r for r in rows if overlaps(r, started_at, started_at + workload_s)]
    if not during:
        return None
    cold = [
        (started_at + (s["t_ms"] - s["response_ms"]) / 1000, started_at + s["t_ms"] / 1000)
        for s in switches
        if s["kind"] == "cold"
    ]
    in_cold = [r for r in during if any(overlaps(r, a, b) for a, b in cold)]
    ncpu = during[0]["host_cpus"]
    return {
        "host_cpus": int(ncpu),
        "busy": _mean(during, "busy"),
        "vcpus": _mean(during, "vcpus"),
        "main": _mean(during, "main"),
        "saturated_share": sum(r["busy"] >= ncpu - SATURATED_MARGIN for r in during) / len(during),
        "cold_busy": _mean(in_cold, "busy"),
        "cold_vcpus": _mean(in_cold, "vcpus"),
        "cold_main": _mean(in_cold, "main"),
    }
