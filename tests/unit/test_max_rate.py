"""Reclaim under a max-rate allocator (max_rate.py), without booting a guest."""

import json
import subprocess

import pytest

from pmr_testbed.config import profiles
from pmr_testbed.guest import kernel
from pmr_testbed.workflows import max_rate, swap_bandwidth


def _line(t: float, write_sectors: int, utime: int, stime: int, delay_ns: int | str = 0) -> str:
    stat = [0] * 17
    stat[6] = write_sectors
    return " ".join(str(x) for x in [t, *stat, utime, stime, delay_ns])


def test_parse_samples_peak_window_and_kswapd_busiest_second():
    # 0.5 s samples; writes at 100 MB/s from t=10 to t=12, then 300 MB/s to
    # t=13; kswapd at 50% of a CPU, then 100%
    lines, sectors, ticks = [], 0, 0
    t = 10.0
    while t <= 14.0 + 1e-9:
        lines.append(_line(round(t, 1), sectors, ticks, 0))
        rate = 100 if t < 12 else 300 if t < 13 else 0
        sectors += int(rate * 2**20 / 512 / 2)
        ticks += 25 if t < 12 else 50 if t < 13 else 0
        t += 0.5
    lines.append("17.0 1 2")  # cut off when the sampler was killed
    got = max_rate.parse_samples("\n".join(lines))
    assert got.reclaim_peak_mbps == pytest.approx(300.0, rel=0.01)
    assert got.kswapd_busiest_cpu == pytest.approx(1.0)
    assert got.swapout_mb == pytest.approx(500.0, rel=0.01)
    # no wait for a CPU: runnable as long as it ran
    assert got.kswapd_busiest_runnable == pytest.approx(1.0)


def test_parse_samples_runnable_second_adds_the_wait_for_a_cpu():
    # kswapd on a CPU 60% of each second and waiting 35% of it
    lines = [_line(float(t), 0, 60 * t, 0, 350_000_000 * t) for t in range(5)]
    got = max_rate.parse_samples("\n".join(lines))
    assert got.kswapd_busiest_cpu == pytest.approx(0.6)
    assert got.kswapd_busiest_runnable == pytest.approx(0.95)
    # a kernel without schedstat: the wait is unknown, not zero
    no_schedstat = [_line(float(t), 0, 60 * t, 0, "-") for t in range(5)]
    got = max_rate.parse_samples("\n".join(no_schedstat))
    assert got.kswapd_busiest_cpu == pytest.approx(0.6)
    assert got.kswapd_busiest_runnable is None


@pytest.mark.parametrize("text", ["", "garbage", _line(1.0, 0, 0, 0)])
def test_parse_samples_refuses_too_few(text):
    with pytest.raises(ValueError, match="nothing to measure"):
        max_rate.parse_samples(text)


def test_samples_are_interpolated_at_whole_seconds():
    # write sectors 0, 10, 30, 30 MB's worth at 0.5-3.5 s: 5 at 1 s, 20 at 2, 30 at 3
    mb = 2**20 // 512
    lines = [_line(t, s * mb, 0, 0) for t, s in ((0.5, 0), (1.5, 10), (2.5, 30), (3.5, 30))]
    assert max_rate.parse_samples("\n".join(lines)).reclaim_peak_mbps == pytest.approx(15.0)


def test_guest_command_swaps_on_the_disk_sets_original_and_parses(tmp_path):
    p = profiles.load("pixel6pro")
    script = max_rate.guest_command(p, tmp_path)
    wm = p.watermarks()
    for part in (
        "swapon /dev/$dev",
        "echo n > /sys/kernel/mm/lru_gen/enabled",
        f"echo {wm['min_free_kbytes']} > /proc/sys/vm/min_free_kbytes",
        "alloc --mb",
        f"--threads {max_rate.WORKERS}",
        str(tmp_path / max_rate.SAMPLES_FILE),
    ):
        assert part in script, part
    job = max_rate.allocator(p)
    assert f"--mb {job['bytes_mb']} " in script
    # more than RAM, less than RAM and swap: it swaps, never OOMs
    assert p.guest_ram_mb < job["bytes_mb"] < p.guest_ram_mb + job["swap_mb"]
    assert subprocess.run(["bash", "-n", "-c", script], capture_output=True).returncode == 0


def test_fio_4k_iops_is_read_from_the_second_job():
    two = json.dumps(
        {
            "jobs": [
                {"write": {"bw_bytes": 2**20, "iops": 1.0}},
                {"write": {"bw_bytes": 4096, "iops": 25000.5}},
            ]
        }
    )
    assert swap_bandwidth.parse_fio_4k_iops(two) == 25000.5
    one = json.dumps({"jobs": [{"write": {"bw_bytes": 2**20, "iops": 1.0}}]})
    assert swap_bandwidth.parse_fio_4k_iops(one) is None
    with pytest.raises(ValueError, match="4 KiB"):
        swap_bandwidth.parse_fio_4k_iops("{}")


def test_guest_fio_command_runs_both_jobs(tmp_path):
    cmd = swap_bandwidth.guest_command("pmrswap", tmp_path / "fio.json")
    for option in (
        "--name=swap-write",
        "--name=swap-randwrite-4k",
        "--rw=randwrite",
        "--bs=4k",
        "--stonewall=1",
    ):
        assert option in cmd


def test_ceiling_refuses_an_allocator_that_did_not_swap(tmp_path, monkeypatch):
    """A ceiling of 0 would leave the disk unthrottled: an error, not a number."""
    monkeypatch.setattr(max_rate, "CACHE", tmp_path / "cache.json")
    monkeypatch.setattr(max_rate, "_key", lambda version, accel, ram_mb: "k")
    monkeypatch.setattr(max_rate, "_boot", lambda *a, **k: max_rate.MaxRate(0.0, 0.0, 0.0))
    with pytest.raises(max_rate.GuestError, match="no reclaim ceiling"):
        max_rate.ceiling(_image(tmp_path, "testbed"), "tcg", tmp_path, 320.0)
    assert not (tmp_path / "cache.json").exists()
    boots = iter([40.0, 30.0, 50.0])
    monkeypatch.setattr(
        max_rate, "_boot", lambda *a, **k: max_rate.MaxRate(next(boots), 0.9, 100.0)
    )
    got = max_rate.ceiling(_image(tmp_path, "testbed"), "tcg", tmp_path, 320.0)
    assert got["reclaim_peak_mbps"] == 40.0 and len(got["boots"]) == 3
    assert got["guest_ns_per_page"] == 320.0
    # cached: measured once per host, with the memory speed it was measured at
    monkeypatch.setattr(max_rate, "_boot", lambda *a, **k: pytest.fail("measured again"))
    assert max_rate.ceiling(_image(tmp_path, "testbed"), "tcg", tmp_path, 640.0) == got


def _image(tmp_path, flavour):
    return kernel.KernelImage(flavour, tmp_path / flavour, "6.1.192+", [])


def test_every_flavour_takes_its_flash_from_the_testbed_kernels_ceiling(tmp_path, monkeypatch):
    """A debug run uses the testbed kernel's ceiling: the cached one without
    building anything, else one measured on the testbed kernel."""
    monkeypatch.setattr(max_rate, "CACHE", tmp_path / "cache.json")
    built, booted = [], []
    monkeypatch.setattr(
        kernel, "build", lambda flavour: built.append(flavour) or _image(tmp_path, flavour)
    )

    def boot(out, profile, image, *a, **k):
        booted.append(image.flavour)
        return max_rate.MaxRate(40.0, 0.9, 100.0)

    monkeypatch.setattr(max_rate, "_boot", boot)
    measured = max_rate.ceiling(_image(tmp_path, "debug"), "tcg", tmp_path, 320.0)
    assert built == ["testbed"] and booted == ["testbed"] * max_rate.CEILING_BOOTS
    # the testbed kernel's entry, which a debug run then finds without a build
    assert max_rate.ceiling(_image(tmp_path, "testbed"), "tcg", tmp_path, 320.0) == measured
    assert max_rate.ceiling(_image(tmp_path, "debug"), "tcg", tmp_path, 320.0) == measured
    assert built == ["testbed"] and len(booted) == max_rate.CEILING_BOOTS


def test_the_ceiling_follows_the_guests_memory_speed(tmp_path, monkeypatch):
    """The flash is set from the ceiling at the campaign's memory speed: a
    guest that touches memory twice as slowly reclaims at half the rate, and
    an entry cached without its memory speed is measured again."""
    entry = {"reclaim_peak_mbps": 72.0, "guest_ns_per_page": 320.0}
    assert max_rate.ceiling_now(entry, 320.0) == 72.0
    assert max_rate.ceiling_now(entry, 640.0) == 36.0
    monkeypatch.setattr(max_rate, "CACHE", tmp_path / "cache.json")
    monkeypatch.setattr(max_rate, "_key", lambda version, accel, ram_mb: "k")
    old = {"reclaim_peak_mbps": 72.0, "boots": [], "allocator": {}}
    (tmp_path / "cache.json").write_text(json.dumps({"entries": {"k": old}}))
    monkeypatch.setattr(max_rate, "_boot", lambda *a, **k: max_rate.MaxRate(50.0, 0.9, 100.0))
    got = max_rate.ceiling(_image(tmp_path, "testbed"), "tcg", tmp_path, 450.0)
    assert got["reclaim_peak_mbps"] == 50.0 and got["guest_ns_per_page"] == 450.0


def test_the_ceiling_is_kept_per_guest_ram():
    """The ceiling profile's guest RAM follows its scale: a ceiling measured
    in a 2 GB guest is not the one of a 3 GB guest."""
    assert max_rate._key("6.1", "tcg", 3072) != max_rate._key("6.1", "tcg", 2048)
    assert max_rate._key("6.1", "tcg", 3072).endswith("|3072 MB")
