"""The chat host's HTTP in a worker: `fetch`, streamed as it arrives, stopped when the task is."""

from __future__ import annotations

import asyncio
from typing import Any

import js  # type: ignore[import-not-found]
from pyodide.ffi import JsException, to_js  # type: ignore[import-not-found]


async def browser_send(
    method: str,
    url: str,
    headers: dict[str, str],
    body: str | None,
    on_chunk: Any = None,
    *,
    credentials: str = "omit",
) -> tuple[int, dict[str, str], str]:
    """The chat host's HTTP: fetch to the provider; cancelling the task aborts the request. With
    `on_chunk`, an event stream's text goes there as it arrives (reactor.host.transport)."""
    controller = js.AbortController.new()
    options = {
        "method": method,
        "headers": headers,
        "signal": controller.signal,
        "credentials": credentials,
    }
    if body is not None:
        options["body"] = body
    try:
        response = await js.fetch(url, to_js(options, dict_converter=js.Object.fromEntries))
        answer_headers = js.Object.fromEntries(response.headers.entries()).to_py()
        answer_headers = {k.lower(): v for k, v in answer_headers.items()}
        streamed = (
            on_chunk is not None
            and response.ok
            and "text/event-stream" in answer_headers.get("content-type", "")
        )
        if not streamed:
            return response.status, answer_headers, await response.text()
        reader, decoder = response.body.getReader(), js.TextDecoder.new()
        keep = to_js({"stream": True}, dict_converter=js.Object.fromEntries)
        finished = False
        try:
            while True:
                piece = await reader.read()
                if piece.done:
                    finished = True
                    break
                on_chunk(decoder.decode(piece.value, keep))
        finally:
            if not finished:  # stopped, or a piece the host could not read: the provider stops too
                controller.abort(js.DOMException.new("The host stopped reading.", "AbortError"))
        return response.status, answer_headers, ""
    except asyncio.CancelledError:
        controller.abort(js.DOMException.new("The person pressed stop.", "AbortError"))
        raise
    except JsException as error:
        raise OSError(str(error)) from None
