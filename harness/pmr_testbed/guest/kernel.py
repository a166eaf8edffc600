"""Build the testbed kernel: Debian's linux-source-6.1 plus the PMR series.

Layout under build/kernel/:
  src/            git tree: commit tagged `pristine` is the unpacked tarball,
                  branch `pmr` is pristine + kernel/patches/*.patch (git am)
  obj-<flavour>/  out-of-tree objects (O=) for `testbed` and `debug`
  state.json      what src/ and each obj dir were built from

A build is skipped when the tarball, the series and the config fragments are
unchanged and the image exists; otherwise make rebuilds incrementally, with
ccache. A file lock keeps two kernel builds from running at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..errors import UserError

KERNEL_BUILD_DIR = paths.BUILD_DIR / "kernel"
SRC_DIR = KERNEL_BUILD_DIR / "src"
STATE_FILE = KERNEL_BUILD_DIR / "state.json"
FLAVOURS = {
    "testbed": ["testbed.config"],
    "debug": ["testbed.config", "debug.config"],
}
# How much slower a flavour runs than `testbed`: deadlines are stretched by
# this much. Under TCG the debug kernel (KASAN, lockdep) boots in ~110 s
# instead of ~12 s and runs the workload several times slower.
SLOWDOWN = {"testbed": 1, "debug": 6}
# Extra kernel command line per flavour. The debug kernel boots with 4-level
# paging (as the phones' arm64 kernels and most x86 ones do): under QEMU's
# `-cpu max` 6.1 picks 5-level paging, and an interrupt that lands in
# identify_cpu() between its memset() of x86_capability and the CPUID read
# that sets X86_FEATURE_LA57 again makes KASAN take the 5-level direct map
# for a wild address (a "wild-memory-access" report in handle_edge_irq at
# boot, seen once; not PMR code).
# Both boot fully preemptible, as Android's GKI kernels are built
# (CONFIG_PREEMPT=y in gki_defconfig): virtme-ng's config has
# PREEMPT_DYNAMIC with voluntary preemption by default, and preempt=full
# switches it at boot, so that reclaim is preempted by the apps where a
# phone's kernel would preempt it (guest.boot() checks the console).
BOOT_ARGS = {"testbed": ["preempt=full"], "debug": ["no5lvl", "preempt=full"]}


@dataclass(frozen=True)
class KernelImage:
    flavour: str
    bzimage: Path
    version: str
    series: list[str]

    @property
    def vmlinux(self) -> Path:
        """The image's symbols (perf report, kernel_profile.py)."""
        return obj_dir(self.flavour) / "vmlinux"

    def as_dict(self) -> dict:
        return {"flavour": self.flavour, "version": self.version, "series": self.series}


def _run(
    cmd: list[str], cwd: Path | None = None, env: dict | None = None, log: Path | None = None
) -> None:
    """Run a command; on failure raise with the tail of its output."""
    full_env = dict(os.environ, **(env or {}))
    if log is None:
        res = subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True)
        out = res.stdout + res.stderr
    else:
        with open(log, "w") as fh:
            res = subprocess.run(
                cmd, cwd=cwd, env=full_env, stdout=fh, stderr=subprocess.STDOUT, text=True
            )
        out = log.read_text(errors="replace")
    if res.returncode != 0:
        tail = "\n".join(out.splitlines()[-25:])
        where = f" (full log: {log})" if log else ""
        raise UserError(f"`{' '.join(cmd[:4])} ...` failed{where}:\n{tail}")


def _git(*args: str) -> str:
    res = subprocess.run(["git", "-C", str(SRC_DIR), *args], capture_output=True, text=True)
    if res.returncode != 0:
        raise UserError(f"git {' '.join(args)} failed in {SRC_DIR}: {res.stderr.strip()}")
    return res.stdout.strip()


def series_files() -> list[Path]:
    """PMR's series (kernel/patches, but its cover letter), then each
    baseline's (kernel/baselines/<name>/, by name): the baselines are other
    kernels' answers to the same problem, kept apart from PMR's series."""
    pmr = sorted(p for p in paths.PATCHES_DIR.glob("*.patch") if not p.name.startswith("0000-"))
    baselines = sorted(paths.BASELINES_DIR.glob("*/*.patch"), key=lambda p: (p.parent.name, p.name))
    return pmr + baselines


def series_name(patch: Path) -> str:
    """A patch as campaign.json's kernel `series` lists it: PMR's by file
    name, a baseline's as <baseline>/<file>."""
    return patch.name if patch.parent == paths.PATCHES_DIR else f"{patch.parent.name}/{patch.name}"


def _digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(series_name(f).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _tarball_id() -> str:
    tb = paths.KERNEL_SOURCE_TARBALL
    if not tb.exists():
        raise UserError(
            f"{tb} not found: install Debian's linux-source-6.1 "
            "(run `make setup` or `apt-get install linux-source-6.1`)"
        )
    st = tb.stat()
    return f"{tb}:{st.st_size}:{int(st.st_mtime)}"


def _load_state() -> dict:
    try:
        return json.loads(STATE_FILE.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def _save_state(state: dict) -> None:
    STATE_FILE.write_text(json.dumps(state, indent=2) + "\n")


@contextmanager
def build_lock():
    KERNEL_BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with open(KERNEL_BUILD_DIR / ".lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("another kernel build is running; waiting for it", file=sys.stderr)
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _drop_debian_packaging_ignore(gitignore: Path) -> None:
    """Debian's top-level .gitignore ends with a block that ignores everything
    at the top level ("Debian packaging"); drop it so git sees the tree."""
    text = gitignore.read_text()
    idx = text.find("# Debian packaging")
    if idx < 0:
        idx = text.find("#\n# Debian")
    if idx >= 0:
        gitignore.write_text(text[:idx].rstrip() + "\n")


def prepare_pristine(state: dict) -> None:
    """Unpack the tarball into a fresh git tree tagged `pristine`."""
    tid = _tarball_id()
    if state.get("tarball") == tid and (SRC_DIR / ".git").exists():
        return
    print(f"unpacking {paths.KERNEL_SOURCE_TARBALL} ...", file=sys.stderr)
    if SRC_DIR.exists():
        shutil.rmtree(SRC_DIR)
    tmp = KERNEL_BUILD_DIR / "unpack"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    _run(["tar", "-xf", str(paths.KERNEL_SOURCE_TARBALL), "-C", str(tmp)])
    (tmp / "linux-source-6.1").rename(SRC_DIR)
    tmp.rmdir()
    _drop_debian_packaging_ignore(SRC_DIR / ".gitignore")
    ident = ["-c", "user.name=pmr-testbed", "-c", "user.email=pmr-testbed@localhost"]
    _run(["git", "init", "-q", "-b", "pristine-branch", str(SRC_DIR)])
    _run(["git", "-C", str(SRC_DIR), "add", "-A"])
    _run(
        [
            "git",
            "-C",
            str(SRC_DIR),
            *ident,
            "commit",
            "-q",
            "-m",
            f"Debian linux-source-6.1 ({kernel_version_of(SRC_DIR)}), pristine",
        ]
    )
    _run(["git", "-C", str(SRC_DIR), "tag", "-f", "pristine"])
    state.clear()
    state["tarball"] = tid


def apply_series(state: dict) -> list[str]:
    """Check out branch `pmr` = pristine + the series, unless already there."""
    files = series_files()
    digest = _digest(files)
    if state.get("series") == digest and _git("rev-parse", "--abbrev-ref", "HEAD") == "pmr":
        return [series_name(f) for f in files]
    _git("checkout", "-q", "-f", "-B", "pmr", "pristine")
    if files:
        res = subprocess.run(
            [
                "git",
                "-C",
                str(SRC_DIR),
                "-c",
                "user.name=pmr-testbed",
                "-c",
                "user.email=pmr-testbed@localhost",
                "am",
                "-q",
                "--3way",
                *[str(f) for f in files],
            ],
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            subprocess.run(["git", "-C", str(SRC_DIR), "am", "--abort"], capture_output=True)
            raise UserError(
                f"the series in {paths.PATCHES_DIR} and {paths.BASELINES_DIR} "
                "does not apply to "
                f"linux-source-6.1: {res.stdout.strip()} {res.stderr.strip()}"
            )
    state["series"] = digest
    return [series_name(f) for f in files]


def kernel_version_of(src: Path) -> str:
    mk = (src / "Makefile").read_text()
    parts = []
    for k in ("VERSION", "PATCHLEVEL", "SUBLEVEL"):
        m = re.search(rf"^{k} = (.*)$", mk, re.M)
        if m is None:
            raise ValueError(f"{src / 'Makefile'} has no {k} line")
        parts.append(m.group(1).strip())
    return ".".join(parts)


def _config_fragments(flavour: str) -> list[Path]:
    return [paths.CONFIG_DIR / f for f in FLAVOURS[flavour]]


def _config_options(text: str) -> dict[str, str]:
    """CONFIG_X -> value ('n' for 'is not set') in a .config or a fragment."""
    options: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        m = re.match(r"^# (CONFIG_\w+) is not set$", line)
        if m:
            options[m.group(1)] = "n"
        elif line.startswith("CONFIG_"):
            k, _, v = line.partition("=")
            options[k] = v
    return options


def _requested_options(fragments: list[Path]) -> dict[str, str]:
    """CONFIG_X -> value as the fragments ask, the last one winning."""
    want: dict[str, str] = {}
    for frag in fragments:
        want |= _config_options(frag.read_text())
    return want


def check_config(obj: Path, fragments: list[Path]) -> None:
    """Fail if Kconfig silently dropped an option the fragments ask for."""
    have = _config_options((obj / ".config").read_text())
    missing = [
        f"{k}={v} (got {have.get(k, 'n')})"
        for k, v in _requested_options(fragments).items()
        if have.get(k, "n") != v
    ]
    if missing:
        raise UserError("kernel config lost requested options: " + ", ".join(missing))


def configure(flavour: str, obj: Path) -> None:
    fragments = _config_fragments(flavour)
    obj.mkdir(parents=True, exist_ok=True)
    configkernel = shutil.which(
        "virtme-configkernel", path=str(Path(sys.executable).parent) + ":" + os.environ["PATH"]
    )
    if not configkernel:
        raise UserError("virtme-configkernel not found: run `make setup` to install virtme-ng")
    cmd = [configkernel, "--defconfig", "--arch", "x86_64"]
    for frag in fragments:
        cmd += ["--custom", str(frag)]
    _run(cmd + [f"O={obj}"], cwd=SRC_DIR)
    # virtme-configkernel applies its own defaults after ours; merge ours
    # last so that they win, then let Kconfig resolve dependencies.
    _run(
        [
            "scripts/kconfig/merge_config.sh",
            "-m",
            "-O",
            str(obj),
            str(obj / ".config"),
            *[str(f) for f in fragments],
        ],
        cwd=SRC_DIR,
    )
    _run(["make", "-s", f"O={obj}", "olddefconfig"], cwd=SRC_DIR)
    check_config(obj, fragments)


# an x86 boot image's setup header: "HdrS" at this offset (Documentation/x86/boot.rst)
BOOT_MAGIC_OFFSET = 0x202
BOOT_MAGIC = b"HdrS"


def check_bzimage(path: Path, option: str) -> None:
    """UserError unless `path` is an x86 kernel boot image (a bzImage);
    `option` names where it was given (`--kernel PATH`)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(BOOT_MAGIC_OFFSET)
            magic = fh.read(len(BOOT_MAGIC))
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise UserError(f"{option}: no such kernel image (a bzImage)") from None
    if magic != BOOT_MAGIC:
        raise UserError(f"{option}: not an x86 kernel image (no bzImage header)")


def obj_dir(flavour: str) -> Path:
    return KERNEL_BUILD_DIR / f"obj-{flavour}"


def image_path(flavour: str) -> Path:
    return obj_dir(flavour) / "arch" / "x86" / "boot" / "bzImage"


def _up_to_date(flavour: str) -> KernelImage | None:
    """The image, if nothing it is built from changed (no lock needed: reads only)."""
    state = _load_state()
    files = series_files()
    key = f"{_tarball_id()}|{_digest(files)}|{_digest(_config_fragments(flavour))}"
    flav = state.get("flavours", {}).get(flavour, {})
    if flav.get("key") == key and image_path(flavour).exists():
        series = [series_name(f) for f in files]
        return KernelImage(flavour, image_path(flavour), flav["version"], series)
    return None


def is_built(flavour: str) -> bool:
    """Whether the flavour's image is built from the series and config as
    they are (False where the kernel's source is not installed yet)."""
    try:
        return _up_to_date(flavour) is not None
    except UserError:
        return False


def check_flavour(flavour: str) -> None:
    """UserError unless `flavour` is a kernel flavour (FLAVOURS)."""
    if flavour not in FLAVOURS:
        raise UserError(f"unknown kernel flavour {flavour!r}: use one of {', '.join(FLAVOURS)}")


def build(flavour: str = "testbed", jobs: int | None = None) -> KernelImage:
    """Build (or reuse) the kernel of a flavour and return its image."""
    check_flavour(flavour)
    for tool in ("make", "gcc", "flex", "bison", "bc", "ccache"):
        if not shutil.which(tool):
            raise UserError(f"{tool} not found: run `make setup` to install the kernel build tools")
    ready = _up_to_date(flavour)
    if ready:
        return ready
    with build_lock():
        state = _load_state()
        prepare_pristine(state)
        series = apply_series(state)
        _save_state(state)
        obj = obj_dir(flavour)
        cfg_digest = _digest(_config_fragments(flavour))
        key = f"{state['tarball']}|{state['series']}|{cfg_digest}"
        flav_state = state.setdefault("flavours", {}).get(flavour, {})
        image = image_path(flavour)
        if flav_state.get("key") == key and image.exists():
            return KernelImage(flavour, image, flav_state["version"], series)
        if flav_state.get("config") != cfg_digest or not (obj / ".config").exists():
            configure(flavour, obj)
        jobs = jobs or os.cpu_count() or 2
        env = {
            "CCACHE_DIR": str(paths.BUILD_DIR / "ccache"),
            "KBUILD_BUILD_USER": "pmr",
            "KBUILD_BUILD_HOST": "testbed",
        }
        print(f"building {flavour} kernel in {obj} (log: {obj}/build.log) ...", file=sys.stderr)
        _run(
            ["make", f"O={obj}", f"-j{jobs}", "CC=ccache gcc", "bzImage"],
            cwd=SRC_DIR,
            env=env,
            log=obj / "build.log",
        )
        version = (obj / "include" / "config" / "kernel.release").read_text().strip()
        state["flavours"][flavour] = {"key": key, "config": cfg_digest, "version": version}
        _save_state(state)
        return KernelImage(flavour, image, version, series)
