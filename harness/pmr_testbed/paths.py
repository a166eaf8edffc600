"""Where things live in the project tree."""

import hashlib
from pathlib import Path

from .errors import UserError

ROOT = Path(__file__).resolve().parents[2]
KERNEL_DIR = ROOT / "kernel"
PATCHES_DIR = KERNEL_DIR / "patches"
CONFIG_DIR = KERNEL_DIR / "config"
PROFILES_DIR = ROOT / "profiles"
SCENARIOS_DIR = ROOT / "scenarios"
SCHEMES_DIR = ROOT / "schemes"
RUNTIME_DIR = ROOT / "runtime"
RUNTIME_BIN = RUNTIME_DIR / "target" / "release" / "pmr-guest"
BUILD_DIR = ROOT / "build"
RESULTS_DIR = ROOT / "results"
KERNEL_SOURCE_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")


def runtime_digest() -> str:
    """The sha256 (hex) of the built pmr-guest binary: what the results the
    host keeps for it (the dilation, the data disk) depend on."""
    try:
        return hashlib.sha256(RUNTIME_BIN.read_bytes()).hexdigest()
    except FileNotFoundError:
        raise UserError(f"{RUNTIME_BIN} is not built: run `make setup`") from None
