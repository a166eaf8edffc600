"""host_cpu.py: the host's CPU while a guest runs, from a fake /proc."""

import csv
import os
import time
from pathlib import Path

import pytest

from pmr_testbed.guest import host_cpu
from pmr_testbed.guest.host_cpu import (
    COLUMNS,
    HostCpuSampler,
    Snapshot,
    csv_row,
    host_cpu_figures,
    read_host_cpu,
)

TICKS = host_cpu._TICKS


def _task_stat(pid: int, comm: str, pgrp: int, utime: int, stime: int) -> str:
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    return f"{pid} ({comm}) S 1 {pgrp} {pgrp} 0 -1 0 0 0 0 0 {utime} {stime} 0 0 20 0\n"


def _put(path: Path, text: str) -> None:
    """Write as the kernel shows a file: whole, never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _fake_proc(
    root: Path,
    busy: int,
    idle: int,
    threads: dict[tuple[int, str], int],
    qemu: int = 300,
    session: int = 200,
    exited_ticks: int = 0,
) -> Path:
    """/proc with a host line and, in process group `session`, a vng and its
    QEMU; the QEMU process's own time is its threads' plus `exited_ticks`."""
    _put(root / "stat", f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n")
    _put(root / str(session) / "stat", _task_stat(session, "vng", session, 0, 0))
    (root / str(session) / "task").mkdir(exist_ok=True)
    _put(
        root / str(qemu) / "stat",
        _task_stat(qemu, "qemu-system-x86", session, sum(threads.values()) + exited_ticks, 0),
    )
    for (tid, comm), ticks in threads.items():
        _put(
            root / str(qemu) / "task" / str(tid) / "stat", _task_stat(tid, comm, session, ticks, 0)
        )
    return root


def test_the_qemu_of_the_boot_is_the_one_with_vcpus_in_its_process_group(tmp_path):
    proc = _fake_proc(tmp_path / "proc", 0, 0, {(300, "qemu-system-x86"): 0, (302, "CPU 0/TCG"): 0})
    other = _fake_proc(
        tmp_path / "proc",
        0,
        0,
        {(400, "qemu-system-x86"): 0, (401, "CPU 0/TCG"): 0},
        qemu=400,
        session=999,
    )
    # virtme-ng's `qemu --version`, in the same group: no vCPU threads
    _fake_proc(tmp_path / "proc", 0, 0, {(250, "qemu-system-x86"): 0}, qemu=250)
    assert other == proc
    assert host_cpu._qemu_pid(proc, 200) == 300
    assert host_cpu._qemu_pid(proc, 999) == 400
    assert host_cpu._qemu_pid(proc, 123) is None


def test_threads_are_split_into_vcpus_main_and_the_rest_with_exited_ones(tmp_path):
    proc = _fake_proc(
        tmp_path / "proc",
        0,
        0,
        {
            (300, "qemu-system-x86"): 7,
            (301, "call_rcu"): 1,
            (302, "CPU 0/TCG"): 50,
            (303, "CPU 1/TCG"): 40,
            (304, "worker"): 2,
        },
        exited_ticks=5,
    )
    assert host_cpu._thread_ticks(proc, 300) == {"vcpus": 90, "main": 7, "other": 8}
    assert host_cpu._thread_ticks(proc, 301) is None  # no such process


def test_a_row_is_cpus_over_the_interval():
    last = Snapshot(100.0, 10.0, 1000, 4000, {"vcpus": 0, "main": 0, "other": 0})
    # 2 s later: the host busy 3 of 4 jiffies, the vCPUs 1.5 CPUs, main 0.25
    now = Snapshot(102.0, 12.0, 1300, 4400, {"vcpus": 3 * TICKS, "main": TICKS // 2, "other": 0})
    assert csv_row(last, now, 2) == ["102.00", "2", "1.500", "1.500", "0.250", "0.000"]
    assert csv_row(Snapshot(100.0, 10.0, 0, 0, None), now, 2) is None  # QEMU not up yet
    # a vCPU thread gone at shutdown: its time leaves the sum
    gone = Snapshot(103.0, 13.0, 1400, 4600, {"vcpus": TICKS, "main": TICKS, "other": 0})
    assert csv_row(now, gone, 2) is None


def test_the_sampler_writes_rows_while_the_guest_runs(tmp_path):
    proc = _fake_proc(
        tmp_path / "proc", 10, 10, {(300, "qemu-system-x86"): 0, (302, "CPU 0/TCG"): 0}
    )
    out = tmp_path / "host_cpu.csv"
    sampler = HostCpuSampler(200, out, proc=proc, interval_s=0.02).start()
    step, deadline = 0, time.monotonic() + 20
    while time.monotonic() < deadline and len(out.read_text().splitlines()) < 4:
        step += 1
        _fake_proc(
            proc,
            10 + 5 * step,
            10 + 5 * step,
            {(300, "qemu-system-x86"): step, (302, "CPU 0/TCG"): 4 * step},
        )
        time.sleep(0.01)
    sampler.stop()
    rows = list(csv.reader(out.open()))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) >= 4
    # the host was busy half of each interval: 1 of its CPUs, whatever the timing
    ncpu = int(rows[1][1])
    assert all(
        float(r[2]) == pytest.approx(ncpu / 2, abs=0.01) for r in rows[1:] if r[2] != "0.000"
    )
    assert all(float(r[3]) >= 0 and float(r[4]) >= 0 for r in rows[1:])


def _write(path: Path, rows: list[tuple]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        w.writerows(rows)
    return path


def test_figures_over_the_workload_and_its_cold_switches(tmp_path):
    start = 1000.0
    # t_unix ends each 1-s interval; the workload runs 1000-1006
    rows = [
        (999.0, 2, 0.5, 0.1, 0.1, 0),
        (1001.0, 2, 1.0, 0.6, 0.3, 0),
        (1002.0, 2, 2.0, 1.6, 0.4, 0),
        (1003.0, 2, 1.95, 1.5, 0.3, 0),
        (1004.0, 2, 1.0, 0.6, 0.3, 0),
        (1005.0, 2, 1.0, 0.6, 0.3, 0),
        (1006.0, 2, 1.0, 0.6, 0.3, 0),
        (1009.0, 2, 0.2, 0.0, 0.1, 0),
    ]
    path = _write(tmp_path / "host_cpu.csv", rows)
    cold = {"kind": "cold", "t_ms": 2900.0, "response_ms": 1800.0}  # 1001.1-1002.9
    hot = {"kind": "hot", "t_ms": 5000.0, "response_ms": 500.0}
    f = host_cpu_figures(read_host_cpu(path), start, 6.0, [cold, hot])
    assert f["host_cpus"] == 2
    assert f["busy"] == pytest.approx((1 + 2 + 1.95 + 1 + 1 + 1) / 6)
    assert f["saturated_share"] == pytest.approx(2 / 6)
    # samples ending at 1002 and 1003 overlap the cold switch
    assert f["cold_busy"] == pytest.approx(1.975)
    assert f["cold_vcpus"] == pytest.approx(1.55)
    assert host_cpu_figures(None, start, 6.0, []) is None
    assert read_host_cpu(tmp_path / "none.csv") is None
    # a line cut off when the harness was stopped is left out
    with path.open("a") as fh:
        fh.write("1010.0,2,1.")
    assert len(read_host_cpu(path)) == len(rows)
