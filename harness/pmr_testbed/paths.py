"""Where things live in the project tree."""

import hashlib
import os
from pathlib import Path

from .errors import UserError

ROOT = Path(__file__).resolve().parents[2]
KERNEL_DIR = ROOT / "kernel"
PATCHES_DIR = KERNEL_DIR / "patches"
BASELINES_DIR = KERNEL_DIR / "baselines"  # other schemes' kernel series
CONFIG_DIR = KERNEL_DIR / "config"
PROFILES_DIR = ROOT / "profiles"
SCENARIOS_DIR = ROOT / "scenarios"
SCHEMES_DIR = ROOT / "schemes"
SCHEMAS_DIR = ROOT / "schemas"  # JSON Schemas of spec.json and summary.json
RUNTIME_DIR = ROOT / "runtime"
RUNTIME_BIN = RUNTIME_DIR / "target" / "release" / "pmr-guest"
BUILD_DIR = ROOT / "build"
RESULTS_DIR = ROOT / "results"
RUNTIME_SNAPSHOTS_DIR = BUILD_DIR / "runtime"
KERNEL_SOURCE_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")


def runtime_digest() -> str:
    """The sha256 (hex) of the built pmr-guest binary: what the results the
    host keeps for it (the dilation, the data disk) depend on."""
    try:
        return hashlib.sha256(RUNTIME_BIN.read_bytes()).hexdigest()
    except FileNotFoundError:
        raise UserError(f"{RUNTIME_BIN} is not built: run `make setup`") from None


def guest_runtime() -> Path:
    """The pmr-guest that guests run: a copy of the built binary, one per
    content (build/runtime/<sha256 prefix>/pmr-guest), written once and
    never rewritten. Guests see the host's files live, so a guest that
    starts a process while `make setup` or cargo rewrites
    runtime/target/release/pmr-guest would load a half-written binary (an
    app then dies of SIGSEGV in ld.so and fails its run); a campaign takes
    this path once and keeps its binary for all its runs."""
    try:
        data = RUNTIME_BIN.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{RUNTIME_BIN} is not built: run `make setup`") from None
    snapshot = RUNTIME_SNAPSHOTS_DIR / hashlib.sha256(data).hexdigest()[:16] / "pmr-guest"
    if not snapshot.exists():
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        tmp = snapshot.with_name(f".pmr-guest.{os.getpid()}")
        tmp.write_bytes(data)
        tmp.chmod(0o755)
        os.replace(tmp, snapshot)
    return snapshot
