"""Facts about the host the harness runs on."""

from __future__ import annotations

from pathlib import Path


def cpu_model() -> str:
    """The host CPU's model name: part of the key of every per-host cache
    (accelerator, dilation, reclaim ceiling) and record (run times)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"
