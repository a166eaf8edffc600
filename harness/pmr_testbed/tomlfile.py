"""Read a TOML data file, turning every problem into one clear line."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from .errors import UserError


def load(path: Path, kind: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise UserError(f"{kind} file {path} not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{kind} file {path} is not valid TOML ({exc}): fix the syntax") from None


def find(directory: Path, name: str, kind: str) -> Path:
    """The data file for `name` in `directory`, or a one-line error listing the choices."""
    path = directory / f"{name}.toml"
    if not path.exists():
        choices = ", ".join(sorted(p.stem for p in directory.glob("*.toml"))) or "none"
        raise UserError(
            f"unknown {kind} {name!r}: choose one of {choices} "
            f"(or add {directory.name}/{name}.toml)"
        )
    return path


def require(table: dict, key: str, types: type | tuple, where: str) -> Any:
    """table[key], checked for presence and type."""
    if key not in table:
        raise UserError(f"{where}: missing `{key}`")
    value = table[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise UserError(f"{where}: `{key}` must be a number, not {value!r}")
    if not isinstance(value, types):
        raise UserError(f"{where}: `{key}` has the wrong type ({type(value).__name__}: {value!r})")
    return value


def positive(table: dict, key: str, where: str, allow_zero: bool = False) -> float:
    value = require(table, key, (int, float), where)
    if value < 0 or (value == 0 and not allow_zero):
        raise UserError(f"{where}: `{key}` must be {'>= 0' if allow_zero else '> 0'}, got {value}")
    return value
