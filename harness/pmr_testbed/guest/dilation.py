"""Time dilation: how much slower the guest runs than the host runs natively.

The same fixed memory-touch microbenchmark (`pmr-guest bench`) runs on the
host and inside a guest booted like the runs' guests; the ratio of the two
per-page times is the factor, reported in every campaign. The guest's own
figures calibrate its workload:
- `guest_work_iters_per_ms` is the apps' CPU loop speed (`init_work_ms`,
  `resume_work_ms` are guest milliseconds of it);
- `guest_ns_per_page`, the guest's memory speed, moves with the host:
  315-465 ns on this project's AMD EPYC host on 2026-11-29/30 and 629-738 on
  2026-11-28, while the CPU loop held within 7%. Memory-bound work (a cold
  launch's heap fill, reclaim) follows it, the CPU loop does not, so a
  scenario that names the memory speed it was calibrated at
  (`ref_ns_per_page`, scenarios.py) runs its clock at it, and the reclaim
  ceiling that sets the flash is scaled by it (max_rate.py).
The benchmark also times its first round, in which every write faults a
fresh page in: `fault_factor`, the guest's slowdown on that, is reported
beside the factor. It tells how much the emulation slows page faults,
which bound how fast the apps can demand memory (13-19 against touches'
7-17 on that host).
The guest's figures are the median over GUEST_BOOTS boots, each the median
of its rounds: one boot alone has given 9.98 and, ten minutes later on the
same host, kernel and command line, 16.65, and three boots together gave
390-481 ns a page at one hour and 247-397 at the next on a quiet host,
while the workload's reclaim did not follow. Each boot's ns per page is
kept beside it.
Results are measured once per host and stored (CACHE), one entry per
(kernel, accel, kernel command line, runtime binary, host CPU), as the
reclaim ceiling is (max_rate.py): every campaign on the host runs at the
same clock and flash, so the checks move with the workload only, not with
the benchmark's noise. Switching between the testbed and the debug kernel
does not measure either again. An entry without its time or over fewer
boots, written by an earlier version, is measured again; delete CACHE to
measure a host again (after it moved, for one). A campaign that is
continued (`pmrtb paper` on the same --out) keeps the dilation it
recorded.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import host, paths
from ..errors import GuestError, UserError
from . import vm

CACHE = paths.BUILD_DIR / "dilation.json"
BENCH_ARGS = ["bench", "--pages", "32768", "--rounds", "5"]
GUEST_BOOTS = 5


@dataclass(frozen=True)
class Dilation:
    factor: float
    host_ns_per_page: float
    guest_ns_per_page: float
    host_work_iters_per_ms: float
    guest_work_iters_per_ms: float
    accel: str
    host_fault_ns_per_page: float
    guest_fault_ns_per_page: float
    # each boot's guest ns per page, of which guest_ns_per_page is the median
    guest_ns_per_page_boots: list[float] = field(default_factory=list)
    # when it was measured (Unix time); 0 for a record without the field
    measured_unix: float = 0.0

    @property
    def fault_factor(self) -> float:
        return self.guest_fault_ns_per_page / self.host_fault_ns_per_page

    def as_dict(self) -> dict:
        return {**asdict(self), "fault_factor": round(self.fault_factor, 3)}

    @classmethod
    def from_dict(cls, d: dict) -> Dilation:
        """as_dict()'s inverse; TypeError for a record of other fields."""
        return cls(**{k: v for k, v in d.items() if k != "fault_factor"})


def _bench_json(output: str) -> dict:
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{") and "ns_per_page" in line:
            return json.loads(line)
    raise ValueError("no benchmark result in output")


def _host_bench() -> dict:
    runs = []
    for _ in range(3):
        res = subprocess.run([str(paths.RUNTIME_BIN), *BENCH_ARGS], capture_output=True, text=True)
        if res.returncode != 0:
            raise UserError(f"pmr-guest bench failed on the host: {res.stderr.strip()}")
        runs.append(_bench_json(res.stdout))
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def _key(kernel_version: str, accel: str, append: list[str]) -> str:
    digest = paths.runtime_digest()[:12]
    boot = vm.boot_signature(accel, append)
    return f"{kernel_version}|{accel}|{boot}|{digest}|{host.cpu_model()}"


def _read_cache() -> dict[str, dict]:
    """{key: dilation} from CACHE (an older single-entry file gives its one)."""
    try:
        data = json.loads(CACHE.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    if not isinstance(data, dict):
        return {}
    if isinstance(data.get("entries"), dict):
        return data["entries"]
    if isinstance(data.get("key"), str) and isinstance(data.get("dilation"), dict):
        return {data["key"]: data["dilation"]}
    return {}


def measure(
    kernel: Path,
    kernel_version: str,
    accel: str,
    *,
    cpus: int = 2,
    ram_mb: int = 1024,
    work_dir: Path,
    append: list[str] | None = None,
) -> Dilation:
    """The dilation in a guest booted with `append` on its command line, as
    the runs are (kernel.BOOT_ARGS)."""
    if not paths.RUNTIME_BIN.exists():
        raise UserError(f"{paths.RUNTIME_BIN} not built: run `make setup`")
    append = list(append or [])
    key = _key(kernel_version, accel, append)
    cache = _read_cache()
    if key in cache:
        try:
            cached = Dilation.from_dict(cache[key])
            if cached.measured_unix and len(cached.guest_ns_per_page_boots) >= GUEST_BOOTS:
                return cached
        except TypeError:
            pass  # written by another version of this file: measure again
    host = _host_bench()
    boots = [
        _guest_bench(kernel, work_dir / f"dilation-console-{i}.log", ram_mb, cpus, accel, append)
        for i in range(1, GUEST_BOOTS + 1)
    ]
    inside = {k: statistics.median(b[k] for b in boots) for k in boots[0]}
    dil = Dilation(
        factor=round(inside["ns_per_page"] / host["ns_per_page"], 3),
        host_ns_per_page=host["ns_per_page"],
        guest_ns_per_page=inside["ns_per_page"],
        host_work_iters_per_ms=host["work_iters_per_ms"],
        guest_work_iters_per_ms=inside["work_iters_per_ms"],
        accel=accel,
        host_fault_ns_per_page=host["fault_ns_per_page"],
        guest_fault_ns_per_page=inside["fault_ns_per_page"],
        guest_ns_per_page_boots=[b["ns_per_page"] for b in boots],
        measured_unix=time.time(),
    )
    cache[key] = dil.as_dict()
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps({"entries": cache}, indent=2) + "\n")
    return dil


def _guest_bench(
    kernel: Path, console: Path, ram_mb: int, cpus: int, accel: str, append: list[str]
) -> dict:
    """The benchmark's result in one guest boot."""
    res = vm.boot(
        kernel,
        exec_cmd=" ".join([str(paths.guest_runtime()), *BENCH_ARGS]),
        console_path=console,
        deadline_s=180,
        ram_mb=ram_mb,
        cpus=cpus,
        accel=accel,
        rwdirs=[],
        append=append,
    )
    try:
        if res.returncode != 0:
            raise ValueError(f"exit status {res.returncode}")
        return _bench_json(res.console)
    except ValueError as exc:
        raise GuestError(
            f"dilation benchmark failed in the guest ({exc}); console: {console}",
            vm.tail(res.console),
        ) from None
