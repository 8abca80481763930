"""HTTP through an injected `send`, one shape for every client reactor's Python has:

    async send(method, url, headers, body_text, on_chunk=None) -> (status, headers, body_text)

Given `on_chunk`, a 2xx `text/event-stream` answer's body goes to `on_chunk(text)` piece by
piece as it arrives (the returned text is then ""); any other answer comes back whole; an
error status is returned, not raised; an unreachable server raises OSError.

On CPython `urllib_send` is the real one; a test can pass one that calls the app in process;
in the page the browser's fetch stands behind the same calls. `fetch_json` is how page services
and the AI Tool runner read the reactor server: JSON in, JSON out, `HttpError` for 4xx/5xx.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from .errors import HttpError, ToolError

Send = Callable[..., Awaitable[tuple[int, dict[str, str], str]]]

__all__ = [
    "REFUSAL_CODES",
    "Preloaded",
    "Send",
    "answer_json",
    "fetch_json",
    "refusal_code",
    "tool_refusal",
    "urllib_send",
]

# The code of a tool's failure when a server refused the request the tool made, by status: what
# the model can do about it (401 and 403: tool_refusal). Any other status is `failed`.
REFUSAL_CODES = {
    400: "invalid_arguments",
    404: "not_found",
    409: "conflict",
    413: "invalid_arguments",
    422: "invalid_arguments",
    429: "unavailable",
}


def refusal_code(status: int) -> str:
    """The code a tool answers with when a server refused its request with `status`."""
    return REFUSAL_CODES.get(status, "failed")


def tool_refusal(error: HttpError) -> ToolError | None:
    """A 401 or 403 as the `not_permitted` answer a tool gives the model (the server's sentence,
    and for a 401 what the person can do, in the model's words and the person's); None for any
    other status."""
    if error.status == 401:
        return ToolError(
            "not_permitted",
            f"{error.detail} Ask the person to sign in (the form at the top of the page), "
            "then try again.",
            display="Sign in at the top of the page first.",
        )
    if error.status == 403:
        return ToolError("not_permitted", error.detail)
    return None


class Preloaded:
    """The answers to the GETs the plugins' starts make (their declarations' `preload`), fetched
    by the page's worker while Pyodide restored: the first plain GET of each path (no body, no
    headers of its own, no signal) is answered from them, once; every other request goes to the
    server. They are what the server answered the same request, with the same cookie, moments
    before."""

    def __init__(self, answers: Any) -> None:
        self._answers: dict[str, tuple[int, str]] = {}
        for answer in answers if isinstance(answers, list) else []:
            if (
                isinstance(answer, list)
                and len(answer) == 3
                and isinstance(answer[0], str)
                and isinstance(answer[1], int)
                and isinstance(answer[2], str)
            ):
                self._answers.setdefault(answer[0], (answer[1], answer[2]))

    def take(
        self, method: str, url: str, body: Any = None, headers: Any = None, signal: Any = None
    ) -> tuple[int, str] | None:
        """(status, text) answered to `url`, if this request is its first plain GET."""
        if method != "GET" or body is not None or headers or signal is not None:
            return None
        return self._answers.pop(url, None)


async def fetch_json(
    send: Send, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
) -> Any:
    """Send `body` as JSON and return the decoded answer (None for an empty one)."""
    text = None if body is None else json.dumps(body)
    status, _headers, answer = await send(
        method, url, {"content-type": "application/json", **(headers or {})}, text
    )
    return answer_json(status, answer)


def answer_json(status: int, text: str) -> Any:
    """A server's answer as data, or the HttpError that carries its sentence (`{"error": ...}`)."""
    if status >= 400:
        try:
            data = json.loads(text)
        except ValueError:
            raise HttpError(status, text[:200]) from None
        body = data if isinstance(data, dict) else {}
        raise HttpError(status, str(body.get("error", text)), body)
    return json.loads(text) if text else None


async def urllib_send(
    method: str,
    url: str,
    headers: dict[str, str],
    body: str | None,
    on_chunk: Callable[[str], None] | None = None,
) -> tuple[int, dict[str, str], str]:
    """A `send` for CPython (tests, scripts, the CLI). Error statuses are returned, not raised."""
    if on_chunk is None:
        return await asyncio.to_thread(_urllib_exchange, method, url, headers, body)
    # The read runs in a thread; its pieces come back through a queue, so on_chunk runs (and
    # raises) here, in the caller's task.
    loop, stop = asyncio.get_running_loop(), threading.Event()
    pieces: asyncio.Queue[Any] = asyncio.Queue()
    reading = asyncio.ensure_future(
        asyncio.to_thread(
            _urllib_stream,
            method,
            url,
            headers,
            body,
            lambda item: loop.call_soon_threadsafe(pieces.put_nowait, item),
            stop,
        )
    )
    # Should the thread end without its last word, the wait below still ends.
    reading.add_done_callback(
        lambda done: pieces.put_nowait(("error", OSError("the connection ended unexpectedly")))
    )
    try:
        while True:
            item = await pieces.get()
            if item[0] == "chunk":
                on_chunk(item[1])
            elif item[0] == "error":
                raise item[1]
            else:  # ("end", status, headers, text)
                return item[1], item[2], item[3]
    finally:
        stop.set()
        reading.cancel()


def _urllib_stream(
    method: str,
    url: str,
    headers: dict[str, str],
    body: str | None,
    put: Callable[[tuple[Any, ...]], object],
    stop: threading.Event,
) -> None:
    import codecs
    import urllib.error
    import urllib.request

    try:
        request = urllib.request.Request(
            url, data=None if body is None else body.encode("utf-8"), method=method, headers=headers
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            answer_headers = _lower(response.headers.items())
            if "text/event-stream" not in answer_headers.get("content-type", ""):
                put(
                    (
                        "end",
                        response.status,
                        answer_headers,
                        response.read().decode("utf-8", "replace"),
                    )
                )
                return
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            while not stop.is_set():
                piece = response.read1(65536)
                if not piece:
                    break
                put(("chunk", decoder.decode(piece)))
            put(("end", response.status, answer_headers, ""))
    except urllib.error.HTTPError as error:
        with error:
            put(
                (
                    "end",
                    error.code,
                    _lower(error.headers.items()),
                    error.read().decode("utf-8", "replace"),
                )
            )
    except urllib.error.URLError as error:
        put(("error", OSError(str(error.reason))))
    except Exception as error:
        put(("error", OSError(str(error))))


def _urllib_exchange(
    method: str, url: str, headers: dict[str, str], body: str | None
) -> tuple[int, dict[str, str], str]:
    import urllib.error
    import urllib.request

    data = None if body is None else body.encode("utf-8")
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return (
                response.status,
                _lower(response.headers.items()),
                response.read().decode("utf-8", "replace"),
            )
    except urllib.error.HTTPError as error:
        with error:
            return (
                error.code,
                _lower(error.headers.items()),
                error.read().decode("utf-8", "replace"),
            )
    except urllib.error.URLError as error:
        raise OSError(str(error.reason)) from None


def _lower(items: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in items}
