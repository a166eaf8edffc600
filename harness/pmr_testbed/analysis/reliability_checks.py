"""reliability.json on the host: checking its shape, adding the host's own
checks (kernel splats on the console; with --swap-write-errors, the
injected errors seen, swap_write_errors.py), and turning it into table rows
and an exit status (0 when nothing failed, 1 otherwise).
"""

from __future__ import annotations

import json
from pathlib import Path

STATUSES = ("pass", "fail", "skipped")
KERNEL_LOG = "kernel_log"
MAX_SPLATS_KEPT = 20


def validate(result: dict) -> dict:
    """The parsed file if it has the shape docs/guest-interface.md gives, else ValueError."""
    if not isinstance(result, dict) or not isinstance(result.get("checks"), list):
        raise ValueError("no `checks` list")
    if result.get("status") not in ("ok", "failed"):
        raise ValueError(f"bad status {result.get('status')!r}")
    for i, check in enumerate(result["checks"]):
        if not isinstance(check, dict) or not isinstance(check.get("name"), str):
            raise ValueError(f"check #{i + 1} has no name")
        if check.get("status") not in STATUSES:
            raise ValueError(f"check {check['name']} has bad status {check.get('status')!r}")
        if not isinstance(check.get("detail", ""), str):
            raise ValueError(f"check {check['name']} has a non-text detail")
    return result


def load(path: Path) -> dict:
    """reliability.json, validated; FileNotFoundError or ValueError otherwise."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    return validate(data)


def with_kernel_log(result: dict, splats: list[str]) -> dict:
    """A copy of `result` with the kernel_log check (fails on any splat)."""
    if splats:
        check = {
            "name": KERNEL_LOG,
            "status": "fail",
            "detail": f"{len(splats)} kernel report(s) on the console; first: {splats[0]}",
            "figures": {"splats": splats[:MAX_SPLATS_KEPT]},
        }
    else:
        check = {
            "name": KERNEL_LOG,
            "status": "pass",
            "detail": "no oops, BUG, WARNING, KASAN or lockdep report on the console",
            "figures": {"splats": []},
        }
    return with_check(result, check)


def with_check(result: dict, check: dict) -> dict:
    """A copy of `result` with `check` last (replacing one of the same name)
    and the status recomputed."""
    checks = [c for c in result["checks"] if c["name"] != check["name"]] + [check]
    out = dict(result, checks=checks)
    out["status"] = "ok" if _passed(out) else "failed"
    return out


def _passed(result: dict) -> bool:
    return not result.get("error") and all(c["status"] != "fail" for c in result["checks"])


def exit_status(result: dict) -> int:
    return 0 if result["status"] == "ok" and _passed(result) else 1


def rows(result: dict) -> list[tuple[str, str, str]]:
    """(check, status, detail) per check, then the runtime's error if any."""
    table = [(c["name"], c["status"], c.get("detail", "")) for c in result["checks"]]
    if result.get("error"):
        table.append(("runtime", "fail", result["error"]))
    return table


def summary(result: dict) -> str:
    """One line: how many checks passed, failed, were skipped."""
    counts = {s: sum(1 for c in result["checks"] if c["status"] == s) for s in STATUSES}
    verdict = "PASSED" if exit_status(result) == 0 else "FAILED"
    return (
        f"{verdict}: {counts['pass']} passed, {counts['fail']} failed, {counts['skipped']} skipped"
    )
