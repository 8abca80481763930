"""Reading request bodies defensively (a size cap, JSON only), and the shapes of refusals: a
sentence for every one, and one 409 for a write that named a stale version.

Every JSON body the server accepts passes here, so the hostile shapes are refused at the door,
before any handler sees them: nesting deeper than MAX_DEPTH (deep JSON makes later code recurse)
and lone UTF-16 surrogates (`"\\ud800"` parses, but can never be stored or sent back as UTF-8).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..arguments import json_kind

MAX_DEPTH = 64


def error_response(status: int, sentence: str, *, retry_after: int | None = None, **fields: Any) -> Response:
    """The one shape of every refusal: `{"error": sentence, ...fields}`, with `Retry-After` when given."""
    headers = {} if retry_after is None else {"retry-after": str(retry_after)}
    return JSONResponse({"error": sentence, **fields}, status, headers=headers)


class StaleVersion(Exception):
    """A write named a version the record no longer has (409): `version` and `current` are the
    record there is now (`current` None once it was deleted), so the caller can read and redo."""

    def __init__(self, sentence: str, version: int, current: dict[str, Any] | None) -> None:
        super().__init__(sentence)
        self.version, self.current = version, current


#: The body of a StaleVersion's 409, for the OpenAPI description.
STALE_SCHEMA = {
    "type": "object",
    "required": ["error", "version", "current"],
    "properties": {"error": {"type": "string"}, "version": {"type": "integer"}, "current": {"type": ["object", "null"]}},
}


def stale_response(stale: StaleVersion) -> Response:
    """The one 409 of every versioned write: `{"error", "version", "current"}`."""
    return error_response(409, str(stale), version=stale.version, current=stale.current)


async def read_json(request: Request, *, limit: int, too_large: str = "") -> Any | Response:
    """The decoded JSON object of the body, or the error Response to send back (413, 400, 422)."""
    body = await read_body(request, limit=limit)
    if body is None:
        return JSONResponse({"error": too_large or f"The body is larger than {limit} bytes."}, 413)
    try:
        data = json.loads(body)
    except RecursionError:
        return JSONResponse({"error": f"The body is not valid JSON: it nests deeper than {MAX_DEPTH} levels."}, 400)
    except (ValueError, UnicodeDecodeError) as error:
        return JSONResponse({"error": f"The body is not valid JSON: {error}."}, 400)
    if not isinstance(data, dict):
        return JSONResponse({"error": f"The body must be a JSON object, not {json_kind(data)}."}, 400)
    problem = json_problem(data)
    if problem is not None:
        field, sentence = problem
        return JSONResponse({"error": sentence, "field": field}, 422)
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
                return path, f"The field {path or 'body'!r} holds a lone UTF-16 surrogate, which is not text; send valid Unicode."
        elif isinstance(value, dict):
            for key, item in value.items():
                inner = f"{path}.{key}" if path else key
                if not _is_utf8(key):
                    return path or "body", f"A key in {path or 'the body'!r} holds a lone UTF-16 surrogate; send valid Unicode."
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
