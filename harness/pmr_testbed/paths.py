"""Where things live in the project tree."""

from pathlib import Path

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
