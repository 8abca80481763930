"""Reading request bodies defensively: a size cap, JSON only, a sentence for every refusal."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response


async def read_json(request: Request, *, limit: int) -> Any | Response:
    """The decoded JSON body, or the error Response to send back (413, 400)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return _too_large(limit)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return _too_large(limit)
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        return JSONResponse({"error": f"The body is not valid JSON: {error}."}, 400)
    if not isinstance(data, dict):
        return JSONResponse({"error": f"The body must be a JSON object, not {type(data).__name__}."}, 400)
    return data


def _too_large(limit: int) -> Response:
    return JSONResponse({"error": f"The body is larger than {limit} bytes."}, 413)
