"""The JSON Schemas of the files one stage hands the next (schemas/):
spec.json, which the host writes and the guest runtime reads (generated from
the runtime's types: `pmr-guest schema`, checked by the runtime's tests), and
summary.json, which the report writes and reads. `problems` lists where a
document breaks its schema, one line each."""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema

from . import paths


@functools.cache
def validator(name: str) -> Any:
    """The validator of schemas/<name>.schema.json, for the draft it names."""
    schema = json.loads((paths.SCHEMAS_DIR / f"{name}.schema.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def problems(name: str, document: Any) -> list[str]:
    """Where `document` breaks schemas/<name>.schema.json, as `a.b.c: what`
    lines (a missing property as `a.b.prop: missing`), in document order."""
    found: set[str] = set()
    for error in validator(name).iter_errors(document):
        where = ".".join(str(p) for p in error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            for key in error.validator_value:
                if key not in error.instance:
                    found.add(f"{where}.{key}: missing" if where else f"{key}: missing")
        else:
            found.add(f"{where or '(top)'}: {error.message}")
    return sorted(found)


class SchemaError(RuntimeError):
    """A document the harness made breaks its schema: a bug in the harness
    (or a schema not regenerated: `make schemas`), never bad user input."""


def check(name: str, document: dict) -> dict:
    """`document` if it follows schemas/<name>.schema.json, else SchemaError."""
    found = problems(name, document)
    if found:
        more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
        raise SchemaError(
            f"the harness wrote a {name} that breaks schemas/{name}.schema.json: "
            + "; ".join(found[:3])
            + more
        )
    return document
