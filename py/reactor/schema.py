"""JSON Schema in one place: checking a declared schema, and validating arguments against it.

Both are cached by the schema's canonical JSON: the same tool schema is checked when its
bundle is declared, contributed and its command registered, and each check costs time in the
page (bench/RESULTS.md); a tool called a thousand times compiles its validator once. The
validator itself is `reactor.json_schema` (why not the jsonschema package: see there).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .json_schema import SchemaError, Validator, check_schema
from .json_text import dumps, loads

# The parameters of a command that takes nothing: an empty object, and nothing else in it.
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def schema_problem(schema: Any) -> str:
    """Return why `schema` cannot describe a tool's arguments, or "" when it can."""
    if not isinstance(schema, dict):
        return f"it must be a JSON Schema object, not {type(schema).__name__}"
    if schema.get("type") != "object":
        return f'its top-level "type" must be "object", not {schema.get("type")!r}'
    try:
        canonical = dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        return f"it is not plain JSON data: {error}"
    return _structure_problem(canonical)


def compiled_validator(schema: dict[str, Any]) -> Validator:
    """The validator of a checked schema, compiled once per distinct schema."""
    return _validator(dumps(schema, sort_keys=True))


def argument_problems(schema: dict[str, Any] | Validator, args: Any) -> list[dict[str, str]]:
    """List each way `args` breaks `schema` as {path, message}, shallowest first."""
    validator = schema if isinstance(schema, Validator) else compiled_validator(schema)
    found = validator.problems(args)
    if not found:
        return []
    problems = sorted(found, key=lambda p: (len(p[0]), list(map(str, p[0]))))
    return [{"path": json_path(path), "message": shortened(message)} for path, message in problems]


def shortened(message: str, limit: int = 240) -> str:
    # Messages quote the offending value; a 20 kB string must not come back whole.
    if len(message) <= limit:
        return message
    half = limit // 2
    return f"{message[:half]} … {message[-half:]}"


def json_path(parts: Any) -> str:
    """Render a path of keys and indexes as `$.a[0].b`."""
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


@lru_cache(maxsize=4096)
def _structure_problem(schema_json: str) -> str:
    try:
        check_schema(loads(schema_json))
    except SchemaError as error:
        return (
            f"it is not a valid JSON Schema: {shortened(error.message)} (at "
            f"{json_path(error.path)})"
        )
    return ""


@lru_cache(maxsize=4096)
def _validator(schema_json: str) -> Validator:
    return Validator(loads(schema_json))
