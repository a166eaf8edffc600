"""Kernel build bookkeeping that can be checked without building."""

import pytest

from fakerun import fake_bzimage
from pmr_testbed import paths
from pmr_testbed.errors import UserError
from pmr_testbed.guest import kernel


def test_debian_packaging_block_is_dropped(tmp_path):
    gi = tmp_path / ".gitignore"
    gi.write_text("*.o\n*.ko\n\n#\n# Debian packaging\n#\n/*\n!/debian/\n")
    kernel._drop_debian_packaging_ignore(gi)
    text = gi.read_text()
    assert "*.o" in text and "/*" not in text.splitlines()


def test_check_config_reports_dropped_options(tmp_path):
    frag = tmp_path / "f.config"
    frag.write_text('CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C="x"\n')
    (tmp_path / ".config").write_text('CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C="x"\n')
    kernel.check_config(tmp_path, [frag])
    (tmp_path / ".config").write_text('# CONFIG_A is not set\nCONFIG_B=y\nCONFIG_C="x"\n')
    with pytest.raises(UserError, match=r"CONFIG_A=y.*CONFIG_B=n"):
        kernel.check_config(tmp_path, [frag])


def test_shipped_fragments_ask_for_what_the_testbed_needs():
    want = kernel._requested_options(kernel._config_fragments("testbed"))
    for opt in (
        "CONFIG_SWAP",
        "CONFIG_ZRAM",
        "CONFIG_MEMCG",
        "CONFIG_PSI",
        "CONFIG_LRU_GEN",
        "CONFIG_HIST_TRIGGERS",
        "CONFIG_VIRTIO_BLK",
        "CONFIG_PREEMPT_DYNAMIC",
    ):
        assert want[opt] == "y", opt
    assert want["CONFIG_LRU_GEN_ENABLED"] == "n"
    debug = kernel._requested_options(kernel._config_fragments("debug"))
    for opt in ("CONFIG_PROVE_LOCKING", "CONFIG_DEBUG_VM", "CONFIG_DEBUG_LIST", "CONFIG_KASAN"):
        assert debug[opt] == "y", opt


def test_unknown_flavour_is_refused():
    with pytest.raises(UserError, match="unknown kernel flavour"):
        kernel.build("fast")


def test_every_flavour_has_a_slowdown_and_boot_arguments():
    assert set(kernel.SLOWDOWN) == set(kernel.FLAVOURS)
    assert set(kernel.BOOT_ARGS) == set(kernel.FLAVOURS)
    # The debug kernel boots with 4-level paging (KASAN's early-boot report
    # with 5-level paging under TCG, see kernel.BOOT_ARGS).
    assert "no5lvl" in kernel.BOOT_ARGS["debug"]
    # Both preempt fully, as Android's GKI kernels do.
    assert all("preempt=full" in args for args in kernel.BOOT_ARGS.values())


def test_a_kernel_image_is_told_by_its_boot_header(tmp_path):
    kernel.check_bzimage(fake_bzimage(tmp_path / "bzImage"), "--kernel x")
    text = tmp_path / "config"
    text.write_text("CONFIG_PMR=y\n" * 64)
    with pytest.raises(UserError, match=r"--kernel x: not an x86 kernel image"):
        kernel.check_bzimage(text, "--kernel x")
    with pytest.raises(UserError, match=r"--kernel x: no such kernel image"):
        kernel.check_bzimage(tmp_path, "--kernel x")
    with pytest.raises(UserError, match=r"--kernel x: no such kernel image"):
        kernel.check_bzimage(tmp_path / "none", "--kernel x")


def _series(tmp_path, monkeypatch):
    pmr, baselines = tmp_path / "patches", tmp_path / "baselines"
    for f in (
        pmr / "0000-cover-letter.patch",
        pmr / "0002-b.patch",
        pmr / "0001-a.patch",
        baselines / "zeta" / "0001-z.patch",
        baselines / "alpha" / "0002-y.patch",
        baselines / "alpha" / "0001-x.patch",
    ):
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f.name)
    monkeypatch.setattr(kernel.paths, "PATCHES_DIR", pmr)
    monkeypatch.setattr(kernel.paths, "BASELINES_DIR", baselines)


def test_baselines_apply_after_pmrs_series_and_are_named_by_folder(tmp_path, monkeypatch):
    _series(tmp_path, monkeypatch)
    names = [kernel.series_name(p) for p in kernel.series_files()]
    assert names == [
        "0001-a.patch",
        "0002-b.patch",
        "alpha/0001-x.patch",
        "alpha/0002-y.patch",
        "zeta/0001-z.patch",
    ]


def test_an_image_built_before_lists_its_series_as_its_build_did(tmp_path, monkeypatch):
    # A campaign that finds the kernel built and one that builds it must
    # record the same series, or paper.md warns that they ran different ones.
    _series(tmp_path, monkeypatch)
    files = kernel.series_files()
    image = fake_bzimage(tmp_path / "bzImage")
    monkeypatch.setattr(kernel, "image_path", lambda flavour: image)
    monkeypatch.setattr(kernel, "_tarball_id", lambda: "tarball")
    fragments = kernel._digest(kernel._config_fragments("testbed"))
    key = f"tarball|{kernel._digest(files)}|{fragments}"
    state = {"flavours": {"testbed": {"key": key, "version": "6.1.192+"}}}
    monkeypatch.setattr(kernel, "_load_state", lambda: state)
    ready = kernel._up_to_date("testbed")
    assert ready is not None
    assert ready.series == [kernel.series_name(f) for f in files]
    assert ready.series[2:] == ["alpha/0001-x.patch", "alpha/0002-y.patch", "zeta/0001-z.patch"]
    assert kernel.is_built("testbed")
    # another series is not up to date
    (tmp_path / "patches" / "0003-c.patch").write_text("c")
    assert kernel._up_to_date("testbed") is None
    assert not kernel.is_built("testbed")


def test_a_kernel_without_its_source_installed_is_not_built(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "KERNEL_SOURCE_TARBALL", tmp_path / "linux-source-6.1.tar.xz")
    assert not kernel.is_built("testbed")
