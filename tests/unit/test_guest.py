"""Guest boot plumbing that can be checked without booting."""

from pathlib import Path

import pytest

from pmr_testbed.errors import UserError
from pmr_testbed.guest import vm


def test_splats_catch_kernel_reports_and_ignore_normal_lines():
    console = "\n".join(
        [
            "[    0.1] Linux version 6.1.192",
            "[    3.2] Adding 349180k swap on /dev/vdb.",
            "[   12.0] WARNING: CPU: 1 PID: 33 at mm/vmscan.c:123 shrink_folio_list+0x1/0x2",
            "[   13.0] BUG: KASAN: use-after-free in foo",
            "[   14.0] lmkd: killed firefox",
        ]
    )
    found = vm.splats(console)
    assert len(found) == 2 and "WARNING: CPU" in found[0] and "KASAN" in found[1]
    assert vm.splats("all good\nno warnings here") == []


def test_disk_qemu_args_carry_throttling_and_serial(tmp_path):
    d = vm.Disk(tmp_path / "s.img", "pmrswap", 10, {"bps_write": 1000, "iops_write": 50})
    args = vm.Disk.qemu_args(d)
    drive = args[1]
    assert "throttling.bps-write=1000" in drive and "throttling.iops-write=50" in drive
    assert args[3] == "virtio-blk-pci,drive=pmrswap,serial=pmrswap"


def test_create_disk_is_sparse_and_refuses_when_space_is_short(tmp_path, monkeypatch):
    d = vm.Disk(tmp_path / "x" / "d.img", "pmrdata", 64)
    vm.create_disk(d)
    assert d.path.stat().st_size == 64 * 2**20
    assert d.path.stat().st_blocks * 512 < 2**20
    big = vm.Disk(tmp_path / "big.img", "pmrswap", 10**9)
    with pytest.raises(UserError, match="disk full"):
        vm.create_disk(big)


def test_vng_command_uses_tcg_when_told(tmp_path):
    cmd = vm.vng_command(
        Path("/k/bzImage"),
        exec_cmd="true",
        ram_mb=512,
        cpus=2,
        accel="tcg",
        rwdirs=[tmp_path],
        disks=[],
    )
    assert "--disable-kvm" in cmd and cmd[cmd.index("--memory") + 1] == "512M"
    assert cmd[cmd.index("--rwdir") + 1] == str(tmp_path)
    d = vm.Disk(tmp_path / "s.img", "pmrswap", 10)
    with_disk = vm.vng_command(
        Path("/k/bzImage"), exec_cmd="true", ram_mb=512, cpus=2, accel="tcg", rwdirs=[], disks=[d]
    )
    opts = [a for a in with_disk if a.startswith("--qemu-opts=")]
    assert len(opts) == 1 and "serial=pmrswap" in opts[0]
    assert "debug-threads=on" in opts[0]  # host_cpu.py finds the vCPU threads by name
    # the guest's RAM is the host's before it boots: no host fault on a first write
    assert "-mem-prealloc" in opts[0].split()
    kvm = vm.vng_command(
        Path("/k/bzImage"), exec_cmd="true", ram_mb=512, cpus=2, accel="kvm", rwdirs=[], disks=[]
    )
    assert "--disable-kvm" not in kvm
    # TCG's guest clears pages without `rep stosb`, which TCG runs a byte at
    # a time; under KVM the host's CPU is the guest's
    assert "max,erms=off" in opts[0].split()
    kvm_opts = [a for a in kvm if a.startswith("--qemu-opts=")]
    assert "-cpu" not in kvm_opts[0].split() and "-mem-prealloc" in kvm_opts[0].split()
    # and a TCG guest says so if its CPU offers ERMS all the same
    assert cmd[cmd.index("--exec") + 1].startswith("grep -qw erms /proc/cpuinfo && echo ")
    assert cmd[cmd.index("--exec") + 1].endswith("; true")
    assert kvm[kvm.index("--exec") + 1] == "true"
    # the cached measurements (dilation, reclaim ceiling) know the CPU model
    assert "erms=off" in vm.boot_signature("tcg", [])
    assert "erms=off" not in vm.boot_signature("kvm", [])
    # the same 9p root and rwdirs on every host, without vng's wait for a
    # virtiofsd that cannot serve them (Debian 12's)
    assert "--force-9p" in cmd and "--force-9p" in kvm


def test_tcg_guests_trust_the_tsc_and_keep_their_own_args():
    def appended(cmd):
        return [cmd[i + 1] for i, a in enumerate(cmd) if a == "--append"]

    tcg = vm.vng_command(
        Path("/k/bzImage"),
        exec_cmd="true",
        ram_mb=512,
        cpus=2,
        accel="tcg",
        rwdirs=[],
        disks=[],
        append=["no5lvl"],
    )
    assert appended(tcg) == ["tsc=reliable", "no5lvl"]
    kvm = vm.vng_command(
        Path("/k/bzImage"),
        exec_cmd="true",
        ram_mb=512,
        cpus=2,
        accel="kvm",
        rwdirs=[],
        disks=[],
        append=["no5lvl"],
    )
    assert appended(kvm) == ["no5lvl"]


def test_forced_accel_is_validated(monkeypatch):
    monkeypatch.setenv("PMR_ACCEL", "hvf")
    with pytest.raises(UserError, match="PMR_ACCEL"):
        vm.detect_accel(Path("/nonexistent"))
    monkeypatch.setenv("PMR_ACCEL", "tcg")
    assert vm.detect_accel(Path("/nonexistent")) == "tcg"


def _fake_guest(monkeypatch, script: str) -> None:
    """Make boot() run `sh -c script` in place of vng, and watch it briefly."""
    monkeypatch.setattr(vm, "vng_command", lambda *a, **k: ["sh", "-c", script])
    monkeypatch.setattr(vm, "BOOT_WATCHDOG_S", 0.6)
    monkeypatch.setattr(vm, "BOOT_POLL_S", 0.05)


def _boot(tmp_path: Path, deadline_s: float = 5.0) -> vm.BootResult:
    return vm.boot(
        Path("bzImage"),
        exec_cmd="true",
        console_path=tmp_path / "console.log",
        deadline_s=deadline_s,
        ram_mb=256,
        cpus=1,
        accel="tcg",
        rwdirs=[],
    )


def _boot_after_a_first_boot_that(tmp_path: Path, monkeypatch, first: str) -> vm.BootResult:
    """Boot where the first boot runs `first` and the second starts init and exits 0."""
    flag = tmp_path / "booted-once"
    _fake_guest(
        monkeypatch,
        f"if [ -e {flag} ]; then echo '[    6.40] virtme-ng-init: starting script'; "
        f"exit 0; fi; touch {flag}; {first}",
    )
    return _boot(tmp_path)


def test_a_kernel_that_never_reaches_user_space_is_booted_again(tmp_path, monkeypatch):
    # First boot hangs silently
    res = _boot_after_a_first_boot_that(tmp_path, monkeypatch, "echo 'pci 0000:00:01.0'; sleep 30")
    assert res.returncode == 0
    assert "starting script" in res.console
    hung = tmp_path / "console.boot-hang-1.log"
    assert "pci 0000:00:01.0" in hung.read_text()


def test_a_guest_that_exits_before_user_space_is_booted_again(tmp_path, monkeypatch):
    # Seen under TCG: QEMU exited 255 while the kernel enumerated PCI.
    res = _boot_after_a_first_boot_that(
        tmp_path, monkeypatch, "echo '[    1.40] pci 0000:00:02.0'; exit 255"
    )
    assert res.returncode == 0
    assert "pci 0000:00:02.0" in (tmp_path / "console.boot-hang-1.log").read_text()


@pytest.mark.parametrize(
    "console",
    [
        "qemu-system-x86_64: -drive if=none: Could not open 'x.img'",  # QEMU refused its options
        "[    0.91] Kernel panic - not syncing: VFS: Unable to mount root fs",
    ],
)
def test_a_guest_that_fails_for_good_before_user_space_is_not_booted_again(
    tmp_path, monkeypatch, console
):
    _fake_guest(monkeypatch, f'echo "{console}"; exit 255')
    if console.startswith("["):
        with pytest.raises(vm.GuestError, match="Kernel panic") as err:
            _boot(tmp_path)
        assert not isinstance(err.value, vm.BootHang)
    else:
        assert _boot(tmp_path).returncode == 255
    assert not list(tmp_path.glob("*boot-hang*"))


def test_a_guest_that_fails_after_user_space_started_is_not_booted_again(tmp_path, monkeypatch):
    _fake_guest(monkeypatch, "echo '[    6.40] virtme-ng-init: starting script'; exit 3")
    res = _boot(tmp_path)
    assert res.returncode == 3
    assert not list(tmp_path.glob("*boot-hang*"))


def test_a_boot_that_hangs_every_time_fails_with_its_console(tmp_path, monkeypatch):
    _fake_guest(monkeypatch, "echo 'Switched to clocksource tsc-early'; sleep 30")
    with pytest.raises(vm.BootHang) as err:
        _boot(tmp_path)
    assert "tsc-early" in err.value.console_tail
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "console.boot-hang-1.log",
        "console.boot-hang-2.log",
        "host_cpu.boot-hang-1.csv",
        "host_cpu.boot-hang-2.csv",
    ]


def test_a_guest_that_booted_and_then_hung_is_not_booted_again(tmp_path, monkeypatch):
    # Past the watchdog the workload may have begun: its deadline rules.
    _fake_guest(monkeypatch, "echo '[    6.40] virtme-ng-init: starting script'; sleep 30")
    with pytest.raises(vm.GuestError) as err:
        _boot(tmp_path, deadline_s=1.2)
    assert not isinstance(err.value, vm.BootHang)
    assert "did not finish within 1 s" in str(err.value)
    assert not list(tmp_path.glob("*boot-hang*"))


def test_every_port_of_the_guest_reaches_the_console_whole(tmp_path, monkeypatch):
    # QEMU opens /proc/self/fd/1 and /proc/self/fd/2 once per port, each
    # with an offset of its own on a file: a later port overwrote an
    # earlier one's output (a debug kernel's boot lines lost to the
    # guest's progress lines). So does `>` in sh.
    _fake_guest(
        monkeypatch,
        "echo '[    0.34] Dynamic Preempt: full' >/proc/self/fd/1; "
        "echo 'pmr-guest: 31 s' >/proc/self/fd/2; "
        "echo '[    6.40] virtme-ng-init: starting script' >/proc/self/fd/1",
    )
    res = _boot(tmp_path)
    lines = res.console.splitlines()
    assert lines[0].startswith("# sh -c")
    assert lines[1:] == [
        "[    0.34] Dynamic Preempt: full",
        "pmr-guest: 31 s",
        "[    6.40] virtme-ng-init: starting script",
    ]
    assert (tmp_path / "console.log").read_text() == res.console


def test_a_guest_without_the_preemption_it_was_booted_with_is_an_error():
    from pmr_testbed.errors import GuestError

    full = ["no5lvl", "preempt=full"]
    vm.check_preemption(full, "[    0.215006] Dynamic Preempt: full\n")
    with pytest.raises(
        GuestError, match="did not boot with full preemption \\(Dynamic Preempt: voluntary\\)"
    ):
        vm.check_preemption(full, "[    0.215006] Dynamic Preempt: voluntary\n")
    with pytest.raises(GuestError, match="no `Dynamic Preempt:` line"):
        vm.check_preemption(full, "Linux version 6.1\n")
    # a boot that asks for no mode is not checked
    vm.check_preemption(["no5lvl"], "Linux version 6.1\n")


def test_a_tcg_guest_whose_cpu_offers_erms_fails():
    said = f"[    1.0] x\n{vm.ERMS_SAID}\n"
    with pytest.raises(vm.GuestError, match="offers ERMS"):
        vm.check_cpu("tcg", said)
    vm.check_cpu("kvm", said)  # under KVM the host's CPU is the guest's
    vm.check_cpu("tcg", "[    1.0] x\n")
