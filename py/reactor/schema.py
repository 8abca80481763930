"""JSON Schema in one place: checking a declared schema, and validating arguments against it.

Both are cached by the schema's canonical JSON: the same tool schema is checked when its
bundle is declared, contributed and its command registered, and each check costs milliseconds
in the page (bench/RESULTS.md); a tool called a thousand times compiles its validator once.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

# Built once: jsonschema's own check_schema builds a metaschema validator on every call.
_METASCHEMA = Draft202012Validator(Draft202012Validator.META_SCHEMA)


def schema_problem(schema: Any) -> str:
    """Return why `schema` cannot describe a tool's arguments, or "" when it can."""
    if not isinstance(schema, dict):
        return f"it must be a JSON Schema object, not {type(schema).__name__}"
    if schema.get("type") != "object":
        return f'its top-level "type" must be "object", not {schema.get("type")!r}'
    try:
        canonical = json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        return f"it is not plain JSON data: {error}"
    return _metaschema_problem(canonical)


def compiled_validator(schema: dict[str, Any]) -> Draft202012Validator:
    """The validator of a checked schema, compiled once per distinct schema."""
    return _validator(json.dumps(schema, sort_keys=True))


def argument_problems(schema: dict[str, Any] | Draft202012Validator, args: Any) -> list[dict[str, str]]:
    """List each way `args` breaks `schema` as {path, message}, shallowest first."""
    validator = schema if isinstance(schema, Draft202012Validator) else compiled_validator(schema)
    errors = sorted(validator.iter_errors(args), key=lambda e: (len(e.path), list(map(str, e.path))))
    return [{"path": json_path(error.path), "message": _shortened(error.message)} for error in errors]


def _shortened(message: str, limit: int = 240) -> str:
    # jsonschema quotes the whole offending value; a 20 kB string must not come back whole.
    if len(message) <= limit:
        return message
    half = limit // 2
    return f"{message[:half]} … {message[-half:]}"


def json_path(parts: Any) -> str:
    """Render a jsonschema path deque as `$.a[0].b`."""
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


@lru_cache(maxsize=4096)
def _metaschema_problem(schema_json: str) -> str:
    error = best_match(_METASCHEMA.iter_errors(json.loads(schema_json)))
    if error is None:
        return ""
    return f"it is not a valid JSON Schema: {error.message} (at {json_path(error.path)})"


@lru_cache(maxsize=4096)
def _validator(schema_json: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema_json))
