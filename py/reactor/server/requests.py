"""Reading request bodies defensively (a size cap, JSON only), and the one 409 of a write that
named a stale version.

Every JSON body the server accepts passes here, so the hostile shapes are refused at the door,
before any handler sees them: nesting deeper than MAX_DEPTH (deep JSON makes later code recurse)
and lone UTF-16 surrogates (`"\\ud800"` parses, but can never be stored or sent back as UTF-8).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from ..arguments import json_kind
from ..errors import ApiError

MAX_DEPTH = 64


class StaleVersion(ApiError):
    """A write named a version the record no longer has (409): `version` and `current` are the
    record there is now (`current` None once it was deleted), so the caller can read and redo."""

    def __init__(self, sentence: str, version: int, current: dict[str, Any] | None) -> None:
        super().__init__(409, sentence, version=version, current=current)
        self.version, self.current = version, current


#: The body of a StaleVersion's 409, for the OpenAPI description.
STALE_SCHEMA = {
    "type": "object",
    "required": ["error", "version", "current"],
    "properties": {
        "error": {"type": "string"},
        "version": {"type": "integer"},
        "current": {"type": ["object", "null"]},
    },
}


async def read_json(request: Request, *, limit: int, too_large: str = "") -> dict[str, Any]:
    """The decoded JSON object of the body; ApiError (413, 400, 422) for anything else."""
    body = await read_body(request, limit=limit)
    if body is None:
        raise ApiError(413, too_large or f"The body is larger than {limit} bytes.")
    try:
        data = json.loads(body)
    except RecursionError:
        raise ApiError(
            400, f"The body is not valid JSON: it nests deeper than {MAX_DEPTH} levels."
        ) from None
    except (ValueError, UnicodeDecodeError) as error:
        raise ApiError(400, f"The body is not valid JSON: {error}.") from None
    if not isinstance(data, dict):
        raise ApiError(400, f"The body must be a JSON object, not {json_kind(data)}.")
    problem = json_problem(data)
    if problem is not None:
        field, sentence = problem
        raise ApiError(422, sentence, field=field)
    return data


async def read_body(request: Request, *, limit: int) -> bytes | None:
    """The raw body, or None once it passes `limit`; stops reading there, whatever it claims."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def json_problem(data: Any, *, max_depth: int = MAX_DEPTH) -> tuple[str, str] | None:
    """(field, sentence) for the first value nested too deep or holding a lone surrogate; else None.

    Iterative, so a hostile document cannot make the check itself recurse."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > max_depth:
            return path[:80], f"The body nests deeper than {max_depth} levels (at {path[:80]}…)."
        if isinstance(value, str):
            if not _is_utf8(value):
                return (
                    path,
                    f"The field {path or 'body'!r} holds a lone UTF-16 surrogate, which is "
                    "not text; send valid Unicode.",
                )
        elif isinstance(value, dict):
            for key, item in value.items():
                inner = f"{path}.{key}" if path else key
                if not _is_utf8(key):
                    return (
                        path or "body",
                        f"A key in {path or 'the body'!r} holds a lone UTF-16 surrogate; "
                        "send valid Unicode.",
                    )
                stack.append((item, inner, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{index}]", depth + 1) for index, item in enumerate(value))
    return None


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
