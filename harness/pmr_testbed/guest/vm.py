"""Boot the emulated phone: virtme-ng over QEMU, with throttled virtio disks.

The host root is shared read-only, so the guest runs the project's binaries in
place; the run directory is shared read-write (`--rwdir`) and receives all
results, and the host's CPU over the boot goes beside the console
(host_cpu.py). The swap disk's QEMU throttling comes from the device profile. A
guest that exits non-zero, panics, or outlives its deadline raises GuestError
carrying the console tail; whatever it wrote so far stays in the run dir.
A guest whose kernel never starts virtme-ng's init (it hangs, or the guest
exits non-zero while the kernel boots, with no splat) is booted once more:
the workload had not begun, so nothing of a run is lost or repeated.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import host, paths
from ..errors import GuestError, UserError
from . import blkdebug
from .host_cpu import HOST_CPU_FILE, HostCpuSampler

ACCEL_CACHE = paths.BUILD_DIR / "accel.json"
KVM_PROBE_TIMEOUT_S = 10
# The kernel starts virtme-ng's init within 3-20 s under TCG, a KASAN kernel
# on a loaded host within 80 s; a guest that has not within this many host
# seconds hung in the kernel's boot (seen once under TCG, in PCI
# enumeration, 0.7 s in) and is booted again, up to BOOT_ATTEMPTS times;
# so is one whose kernel booted and that exited non-zero before user space
# without a splat (seen once under TCG: status 255, its console stopping
# in PCI enumeration 1.4 s in). QEMU refusing its options (no kernel line)
# or a kernel that panics is not booted again.
BOOT_WATCHDOG_S = 300.0
BOOT_ATTEMPTS = 2
# virtme-ng's init logs through the kernel: "[    2.68] virtme-ng-init: ..."
USERSPACE_MARKER = re.compile(r"^\[[ \d.]+\] virtme-ng-init: ", re.MULTILINE)
# any kernel log line: QEMU that refuses its options prints none
KERNEL_LINE = re.compile(r"^\[ *\d+\.\d+\] ", re.MULTILINE)
# preempt=<mode> on the command line, and what a 6.1 kernel with
# PREEMPT_DYNAMIC says at boot (one without it ignores preempt=)
PREEMPT_ARG = re.compile(r"^preempt=(\w+)$")
PREEMPT_SAID = re.compile(r"Dynamic Preempt: (\w+)")
BOOT_POLL_S = 2.0
# Console lines that mean the kernel is unwell; a run that shows one fails.
SPLAT_PATTERNS = [
    r"Kernel panic",
    r"\bBUG: ",
    r"\bOops\b",
    r"WARNING: .* at ",
    r"WARNING: CPU: ",
    r"general protection fault",
    r"KASAN: ",
    r"UBSAN: ",
    r"possible circular locking",
    r"possible recursive locking",
    r"INFO: task .* blocked for more than",
    r"list_add corruption",
    r"list_del corruption",
    r"Bad page state",
    r"page dumped because",
    r"soft lockup",
    r"hard LOCKUP",
    r"RCU stall",
    r"rcu_sched self-detected stall",
]


@dataclass(frozen=True)
class Disk:
    """A raw image attached as virtio-blk with a serial the guest looks for;
    with `blkdebug` (a config file, blkdebug.py) QEMU's blkdebug driver sits
    between the raw format and the image and fails the writes it names, which
    QEMU reports to the guest (werror=report) instead of pausing it."""

    path: Path
    serial: str
    size_mb: int
    throttle: dict = field(default_factory=dict)  # QEMU throttling.* options
    blkdebug: Path | None = None
    read_only: bool = False  # the guest cannot write it; guests may share it

    def qemu_args(self) -> list[str]:
        common = [
            "if=none",
            f"id={self.serial}",
            "format=raw",
            "cache=writeback",
            "discard=unmap",
        ] + (["readonly=on"] if self.read_only else [])
        if self.blkdebug is None:
            opts = [f"file={blkdebug.qemu_escape(str(self.path))}", *common]
        else:
            opts = [
                *common,
                *blkdebug.file_options(self.path, self.blkdebug),
                "werror=report",
                "rerror=report",
            ]
        key = {
            "bps_write": "bps-write",
            "iops_write": "iops-write",
            "bps_read": "bps-read",
            "iops_read": "iops-read",
        }
        for name, value in self.throttle.items():
            opts.append(f"throttling.{key[name]}={int(value)}")
        return [
            "-drive",
            ",".join(opts),
            "-device",
            f"virtio-blk-pci,drive={self.serial},serial={self.serial}",
        ]


def check_disk_space(directory: Path, need_mb: int, serial: str) -> None:
    """Make directory; fail with a clear line if it has not need_mb to spare."""
    directory.mkdir(parents=True, exist_ok=True)
    free_mb = shutil.disk_usage(directory).free // 2**20
    if free_mb < need_mb + 512:
        raise UserError(
            f"disk full: {directory} has {free_mb} MB free, the guest's "
            f"{serial} disk needs {need_mb} MB: free some space"
        )


def create_disk(disk: Disk) -> None:
    """A sparse raw image of disk.size_mb; fails with a clear line if space is short."""
    check_disk_space(disk.path.parent, disk.size_mb, disk.serial)
    with open(disk.path, "wb") as fh:
        fh.truncate(disk.size_mb * 2**20)


def splats(console: str) -> list[str]:
    """Console lines that show an oops, BUG, WARNING, lockdep or KASAN report.
    Ordinary error messages (e.g. the I/O errors `--swap-write-errors`
    injects) match none of SPLAT_PATTERNS, so they are no splat."""
    rx = re.compile("|".join(SPLAT_PATTERNS))
    return [line.strip() for line in console.splitlines() if rx.search(line)]


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def check_host_tools() -> None:
    if not shutil.which("qemu-system-x86_64"):
        raise UserError(
            "qemu-system-x86_64 not found: run `make setup` (or apt-get install qemu-system-x86)"
        )
    if not _vng():
        raise UserError("vng (virtme-ng) not found: run `make setup` to create the project venv")
    if not shutil.which("udevadm"):
        raise UserError(
            "udev is not installed on the host: vng --exec returns nothing "
            "without it; run `make setup` (or apt-get install udev)"
        )


def vng_env() -> dict:
    """vng runs its helpers (virtme-run, ...) from PATH: put the venv first."""
    venv_bin = str(Path(sys.executable).parent)
    return dict(os.environ, PATH=venv_bin + os.pathsep + os.environ.get("PATH", ""))


def _vng() -> str | None:
    venv_bin = str(Path(sys.executable).parent)
    return shutil.which("vng", path=venv_bin + os.pathsep + os.environ.get("PATH", ""))


def _probe_kvm(kernel: Path) -> bool:
    """Boot the kernel with KVM to a deliberate 'no init' panic.

    A working KVM gets there in about a second and QEMU exits (-no-reboot);
    where nested virtualization is missing the boot hangs, and the timeout
    tells us to use TCG.
    """
    cmd = [
        "qemu-system-x86_64",
        "-accel",
        "kvm",
        "-m",
        "256",
        "-nographic",
        "-no-reboot",
        "-kernel",
        str(kernel),
        "-append",
        "console=ttyS0 panic=-1 init=/nonexistent-init",
    ]
    try:
        res = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=KVM_PROBE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return False
    return "Kernel panic" in res.stdout + res.stderr


def detect_accel(kernel: Path) -> str:
    """'kvm' when KVM really runs guests here, else 'tcg' (cached per host)."""
    forced = os.environ.get("PMR_ACCEL")
    if forced:
        if forced not in ("kvm", "tcg"):
            raise UserError(f"PMR_ACCEL={forced} is not valid: use kvm or tcg")
        return forced
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg"
    key = f"{os.uname().release}|{host.cpu_model()}"
    try:
        cached = json.loads(ACCEL_CACHE.read_text())
        if cached.get("host") == key:
            return cached["accel"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        pass
    print("probing KVM (a hang here means no nested virtualization) ...", file=sys.stderr)
    accel = "kvm" if _probe_kvm(kernel) else "tcg"
    if accel == "tcg":
        print("KVM does not run guests on this host: using TCG", file=sys.stderr)
    ACCEL_CACHE.parent.mkdir(parents=True, exist_ok=True)
    ACCEL_CACHE.write_text(json.dumps({"host": key, "accel": accel}) + "\n")
    return accel


# Under TCG the guest's kernel finds its vCPUs' TSCs unsynchronized and
# falls back to the HPET, whose every read is an emulated device access of
# a few microseconds, where a phone's arm64 timer takes tens of
# nanoseconds. Reclaim's timing tracepoints read the clock per folio: in a
# smoke run under pmr, perf (`pmrtb run --perf-hz`) put 45% of kswapd's
# samples in read_hpet(). QEMU's TSC follows the host's, which is
# synchronized: trust it.
TCG_BOOT_ARGS = ["tsc=reliable"]


# QEMU allocates a guest's RAM from the host lazily: the guest's first write
# to each of its physical pages also faults in the host, a phone's DRAM has
# no such cost. In a 2 GB guest with 2 vCPUs under TCG that made a fresh
# anonymous page cost 21.7 us to fault, against 13.0 us with the RAM
# preallocated and 11.9 us for a page the guest had used before: the apps'
# demand before the first reclaim ran at 0.6x the rate of the same work
# later. Every guest's RAM is allocated before it boots.
QEMU_RAM_OPTS = ("-mem-prealloc",)

# Under TCG virtme-ng gives the guest QEMU's `max` CPU, which offers ERMS
# (fast `rep movsb`/`rep stosb`), so the guest's kernel clears every new
# page with `rep stosb` and copies with `rep movsb`, which TCG emulates a
# byte at a time. A phone's arm64 kernel clears a page with `dc zva`, a
# small part of a page fault's cost. In a 2 GB guest with 2 vCPUs a fresh
# anonymous page took 13.4 us to fault with ERMS and 8.8 us without (the
# kernel then clears with `rep stosq`), while touching a mapped page took
# the same 251-258 ns: the heap fills of cold launches, which are page
# faults, were half again as long beside the rest of the guest's work.
# The flag only picks the guest's string routines; under KVM the host's
# CPU runs them natively.
TCG_CPU_OPTS = ("-cpu", "max,erms=off")
# QEMU takes the last `-cpu` it is given: a TCG guest says this on its
# console if its CPU offers ERMS all the same, and boot() fails it.
ERMS_SAID = "pmr-testbed: the guest's CPU offers ERMS"


def accel_boot_args(accel: str) -> list[str]:
    """Kernel command line every guest under `accel` gets."""
    return list(TCG_BOOT_ARGS) if accel == "tcg" else []


def accel_qemu_opts(accel: str) -> list[str]:
    """QEMU options every guest under `accel` gets."""
    return list(QEMU_RAM_OPTS) + (list(TCG_CPU_OPTS) if accel == "tcg" else [])


def boot_signature(accel: str, append: list[str]) -> str:
    """How a guest under `accel` with `append` on its command line boots,
    beyond its kernel: the command line and QEMU's options. The caches of
    measurements made in a guest (dilation.py, max_rate.py) key on it."""
    return " ".join(accel_boot_args(accel) + list(append) + accel_qemu_opts(accel))


@dataclass
class BootResult:
    returncode: int
    console: str
    elapsed_s: float


def vng_command(
    kernel: Path,
    *,
    exec_cmd: str | None,
    ram_mb: int,
    cpus: int,
    accel: str,
    rwdirs: list[Path],
    disks: list[Disk],
    append: list[str] | None = None,
) -> list[str]:
    # --force-9p: the root and the rwdirs on 9p on every host. Debian 12's
    # virtiofsd (QEMU's C one) answers --version as root but fails on vng's
    # options, and vng waited 3 s for it, for the root and again for the
    # rwdirs, before it fell back to 9p: 6-7 s of every boot, for nothing.
    cmd = [
        _vng() or "vng",
        "--run",
        str(kernel),
        "--verbose",
        "--disable-microvm",
        "--force-9p",
        "--cpus",
        str(cpus),
        "--memory",
        f"{ram_mb}M",
        "--cwd",
        str(paths.ROOT),
    ]
    if accel == "tcg":
        cmd.append("--disable-kvm")
    append = accel_boot_args(accel) + list(append or [])
    for d in rwdirs:
        cmd += ["--rwdir", str(d)]
    # name QEMU's threads ("CPU 0/TCG"), for host_cpu.py; -name options merge
    qemu: list[str] = ["-name", "debug-threads=on", *accel_qemu_opts(accel)]
    for disk in disks:
        qemu += disk.qemu_args()
    # "=" form: argparse would take a value that starts with "-" for an option
    cmd.append("--qemu-opts=" + " ".join(shlex.quote(a) for a in qemu))
    for a in append or []:
        cmd += ["--append", a]
    if exec_cmd is not None:
        if accel == "tcg":
            exec_cmd = f"grep -qw erms /proc/cpuinfo && echo {shlex.quote(ERMS_SAID)}; {exec_cmd}"
        cmd += ["--exec", exec_cmd]
    return cmd


class BootHang(GuestError):
    """The kernel never started user space: the workload did not begin."""


def boot(
    kernel: Path,
    *,
    exec_cmd: str,
    console_path: Path,
    deadline_s: float,
    ram_mb: int,
    cpus: int,
    accel: str,
    rwdirs: list[Path],
    disks: Sequence[Disk] = (),
    append: list[str] | None = None,
    check_splats: bool = True,
) -> BootResult:
    """Boot, run exec_cmd, and return its exit status and the console.

    Raises GuestError if the guest outlives deadline_s, if the console shows
    a kernel splat (check_splats), or if QEMU itself fails to start; and
    BootHang if the kernel did not reach user space (it hung, or the guest
    exited non-zero while it booted, with no splat) in BOOT_ATTEMPTS boots
    (the console of each hung boot is kept beside console_path); when
    `append` asks for a preemption mode, if the kernel does not run with it
    (check_preemption); and if a TCG guest's CPU offers ERMS (check_cpu).
    """
    cmd = vng_command(
        kernel,
        exec_cmd=exec_cmd,
        ram_mb=ram_mb,
        cpus=cpus,
        accel=accel,
        rwdirs=list(rwdirs),
        disks=list(disks),
        append=append,
    )
    console_path.parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, BOOT_ATTEMPTS + 1):
        try:
            res = _boot_once(cmd, console_path, deadline_s, check_splats)
            check_preemption(append or [], res.console)
            check_cpu(accel, res.console)
            return res
        except BootHang as hang:
            kept = console_path.with_name(f"{console_path.stem}.boot-hang-{attempt}.log")
            console_path.replace(kept)
            host = console_path.with_name(HOST_CPU_FILE)
            if host.exists():
                host.replace(host.with_name(f"{host.stem}.boot-hang-{attempt}.csv"))
            if attempt == BOOT_ATTEMPTS:
                raise BootHang(
                    f"{hang} ({attempt} boots; consoles: {kept.parent}/"
                    f"{console_path.stem}.boot-hang-*.log)",
                    hang.console_tail,
                ) from None
            print(f"warning: {hang}; console kept as {kept}; booting again", file=sys.stderr)
    raise AssertionError("unreachable")


def check_preemption(append: list[str], console: str) -> None:
    """Raise GuestError if `append` has preempt=<mode> and the console does
    not say the kernel runs with that mode."""
    wanted = [m.group(1) for arg in append if (m := PREEMPT_ARG.match(arg))]
    if not wanted:
        return
    found = PREEMPT_SAID.search(console)
    if found is None or found.group(1) != wanted[-1]:
        said = found.group(0) if found else "no `Dynamic Preempt:` line"
        raise GuestError(
            f"the guest kernel did not boot with {wanted[-1]} preemption ({said}): "
            "kernel/config/testbed.config asks for CONFIG_PREEMPT_DYNAMIC=y"
        )


def check_cpu(accel: str, console: str) -> None:
    """Raise GuestError if a TCG guest said its CPU offers ERMS."""
    if accel == "tcg" and ERMS_SAID in console:
        raise GuestError(
            f"the guest's CPU offers ERMS although QEMU was given "
            f"`{' '.join(TCG_CPU_OPTS)}`: another `-cpu` came after it"
        )


def _userspace_started(console_path: Path) -> bool:
    return USERSPACE_MARKER.search(console_path.read_text(errors="replace")) is not None


def _wait(
    proc: subprocess.Popen, console_path: Path, start: float, deadline_s: float
) -> tuple[int | None, bool]:
    """The guest's exit status (None if it outlived its time) and whether its
    kernel started user space. Until it has, the time is BOOT_WATCHDOG_S."""
    booted = False
    while True:
        limit = deadline_s if booted else min(deadline_s, BOOT_WATCHDOG_S)
        left = limit - (time.monotonic() - start)
        if left <= 0:
            return None, booted
        try:
            return proc.wait(timeout=min(BOOT_POLL_S, left)), booted
        except subprocess.TimeoutExpired:
            booted = booted or _userspace_started(console_path)


# How long the console copy may go on after the guest's exit: only a stray
# process still holding the pipe would make it.
COPY_WAIT_S = 30


def _copy_to(pipe, log) -> None:
    """Copy the guest's output from `pipe` to the console file as it comes."""
    try:
        for chunk in iter(lambda: pipe.read1(65536), b""):
            log.write(chunk)
            log.flush()
    except ValueError:  # the console was closed: a process kept the pipe open
        pass


def _boot_once(
    cmd: list[str], console_path: Path, deadline_s: float, check_splats: bool
) -> BootResult:
    start = time.monotonic()
    with open(console_path, "wb") as log:
        log.write(("# " + shlex.join(cmd) + "\n").encode())
        log.flush()
        # A pipe, not the file: virtme-ng has QEMU open /proc/self/fd/1 and
        # /proc/self/fd/2 once per port (serial console, the guest's
        # stdout and stderr), and a file opened so gets an offset of its
        # own: the guest's output overwrote the start of the console.
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=paths.ROOT,
            env=vng_env(),
        )
        copier = threading.Thread(target=_copy_to, args=(proc.stdout, log), daemon=True)
        copier.start()
        sampler = HostCpuSampler(proc.pid, console_path.with_name(HOST_CPU_FILE)).start()
        try:
            rc, booted = _wait(proc, console_path, start, deadline_s)
        finally:
            sampler.stop()
        if rc is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        copier.join(timeout=COPY_WAIT_S)
        if not copier.is_alive() and proc.stdout is not None:
            proc.stdout.close()
        if rc is None:
            console = console_path.read_text(errors="replace")
            if not booted:
                raise BootHang(
                    f"the kernel did not start user space within "
                    f"{min(deadline_s, BOOT_WATCHDOG_S):.0f} s",
                    tail(console),
                )
            raise GuestError(
                f"guest did not finish within {deadline_s:.0f} s (hung or too slow); "
                f"console: {console_path}",
                tail(console),
            )
    console = console_path.read_text(errors="replace")
    elapsed = time.monotonic() - start
    if (
        rc != 0
        and KERNEL_LINE.search(console)
        and not USERSPACE_MARKER.search(console)
        and not splats(console)
    ):
        raise BootHang(
            f"the guest exited with status {rc} while its kernel booted, before user space",
            tail(console),
        )
    if check_splats:
        found = splats(console)
        if found:
            raise GuestError(
                f"kernel reported a problem ({found[0]}); console: {console_path}", tail(console)
            )
    return BootResult(rc, console, elapsed)
