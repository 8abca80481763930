"""HTTP for the providers, through an injected `send`, so the page can back it with fetch.

    async send(method, url, headers, body_text, on_chunk=None) -> (status, headers, body_text)

Given `on_chunk`, a 2xx `text/event-stream` answer's body goes to `on_chunk(text)` piece by
piece as it arrives (the returned text is then ""); any other answer comes back whole.

No network library is imported here: in the page `send` wraps the browser's fetch; on
CPython `urllib_send` does. `post_json` is the one place a provider's answer becomes data or
a ProviderError whose message says what to do — and never holds the API key.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from ..cancellation import CancelToken
from ..errors import AbortedError
from .errors import ProviderError
from .streaming import EventStream

Send = Callable[..., Awaitable[tuple[int, dict[str, str], str]]]

_KINDS = {
    400: "invalid_request",
    401: "authentication",
    403: "permission",
    404: "not_found",
    413: "request_too_large",
    429: "rate_limit",
    529: "overloaded",
}
_ADVICE = {
    "authentication": "Check the API key.",
    "permission": "The key may not use this model or endpoint.",
    "not_found": "Check the base URL and the model name.",
    "rate_limit": "Wait a moment and try again.",
    "overloaded": "The provider is overloaded; try again shortly.",
    "server": "The provider failed; try again shortly.",
}


async def post_json(
    send: Send,
    url: str,
    headers: dict[str, str],
    body: dict[str, Any],
    *,
    signal: CancelToken,
    provider: str,
    secret: str = "",
) -> dict[str, Any]:
    """POST `body` as JSON and return the decoded answer; raise ProviderError or AbortedError."""
    status, answer_headers, text = await _post(send, url, headers, body, signal, provider, secret)
    return _answer(status, answer_headers, text, provider, secret)


async def post_stream(
    send: Send,
    url: str,
    headers: dict[str, str],
    body: dict[str, Any],
    *,
    signal: CancelToken,
    provider: str,
    secret: str = "",
    on_event: Callable[[str, str], object],
) -> dict[str, Any] | None:
    """POST `body` (which asks for a stream) and hand each server-sent event to
    `on_event(type, data)` as it arrives; None once the stream ends. A server that answers one
    JSON document instead (it does not stream) gets that document returned, as post_json would."""
    events = EventStream()

    def hand_on(pairs: list[tuple[str, str]]) -> None:
        for kind, data in pairs:
            try:
                on_event(kind, data)
            except ProviderError:
                raise
            except Exception as error:  # an event of a shape the provider does not send
                raise ProviderError(
                    f"{provider} streamed an event this host cannot read ({error!r}): {data[:200]!r}.",
                    provider=provider,
                    status=200,
                    kind="bad_response",
                ) from None

    def chunk(text: str) -> None:
        if not signal.aborted:  # after Stop, what still arrives is dropped
            hand_on(events.feed(text))

    status, answer_headers, text = await _post(send, url, headers, body, signal, provider, secret, chunk)
    if 200 <= status < 300 and not text:
        hand_on(events.close())
        return None
    return _answer(status, answer_headers, text, provider, secret)


async def _post(
    send: Send,
    url: str,
    headers: dict[str, str],
    body: dict[str, Any],
    signal: CancelToken,
    provider: str,
    secret: str,
    on_chunk: Callable[[str], None] | None = None,
) -> tuple[int, dict[str, str], str]:
    extra = {} if on_chunk is None else {"on_chunk": on_chunk}
    try:
        return await signal.race(send("POST", url, {"content-type": "application/json", **headers}, json.dumps(body), **extra))
    except (AbortedError, ProviderError):
        raise
    except Exception as error:  # OSError here; a JsException ("Failed to fetch") in the page
        raise ProviderError(
            _hide(f"{provider} at {url} could not be reached: {error}.", secret), provider=provider, kind="unreachable"
        ) from None


def _answer(status: int, answer_headers: dict[str, str], text: str, provider: str, secret: str) -> dict[str, Any]:
    data = _decode(text)
    if 200 <= status < 300:
        if not isinstance(data, dict):
            raise ProviderError(
                f"{provider} answered {status} with something that is not a JSON object: {text[:200]!r}.",
                provider=provider,
                status=status,
                kind="bad_response",
            )
        return data
    kind = _KINDS.get(status, "server" if status >= 500 else "error")
    message, provider_kind = _error_detail(data, text)
    retry_after = _retry_after(answer_headers)
    advice = _ADVICE.get(kind, "")
    if retry_after is not None and kind in ("rate_limit", "overloaded"):
        advice = f"Wait {retry_after:g} seconds and try again."
    said = f"{provider} answered {status} ({provider_kind or kind}): {message}"
    raise ProviderError(
        _hide(f"{said.rstrip('.')}. {advice}".strip(), secret),
        provider=provider,
        status=status,
        kind=kind,
        retry_after=retry_after,
    )


async def urllib_send(
    method: str, url: str, headers: dict[str, str], body: str | None, on_chunk: Callable[[str], None] | None = None
) -> tuple[int, dict[str, str], str]:
    """A `send` for CPython (tests, scripts). Error statuses are returned, not raised."""
    if on_chunk is None:
        return await asyncio.to_thread(_urllib_exchange, method, url, headers, body)
    # The read runs in a thread; its pieces come back through a queue, so on_chunk runs (and
    # raises) here, in the caller's task.
    loop, stop = asyncio.get_running_loop(), threading.Event()
    pieces: asyncio.Queue[Any] = asyncio.Queue()
    reading = asyncio.ensure_future(
        asyncio.to_thread(
            _urllib_stream, method, url, headers, body, lambda item: loop.call_soon_threadsafe(pieces.put_nowait, item), stop
        )
    )
    # Should the thread end without its last word, the wait below still ends.
    reading.add_done_callback(lambda done: pieces.put_nowait(("error", OSError("the connection ended unexpectedly"))))
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
        request = urllib.request.Request(url, data=None if body is None else body.encode("utf-8"), method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=120) as response:
            answer_headers = _lower(response.headers.items())
            if "text/event-stream" not in answer_headers.get("content-type", ""):
                put(("end", response.status, answer_headers, response.read().decode("utf-8", "replace")))
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
            put(("end", error.code, _lower(error.headers.items()), error.read().decode("utf-8", "replace")))
    except urllib.error.URLError as error:
        put(("error", OSError(str(error.reason))))
    except Exception as error:
        put(("error", OSError(str(error))))


def _urllib_exchange(method: str, url: str, headers: dict[str, str], body: str | None) -> tuple[int, dict[str, str], str]:
    import urllib.error
    import urllib.request

    data = None if body is None else body.encode("utf-8")
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, _lower(response.headers.items()), response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        with error:
            return error.code, _lower(error.headers.items()), error.read().decode("utf-8", "replace")
    except urllib.error.URLError as error:
        raise OSError(str(error.reason)) from None


def _lower(items: Any) -> dict[str, str]:
    return {k.lower(): v for k, v in items}


def _decode(text: str) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _error_detail(data: Any, text: str) -> tuple[str, str]:
    # OpenAI, llama.cpp, vLLM: {"error": {"message", "type", "code"}}; Anthropic: {"type": "error",
    # "error": {"type", "message"}}; Ollama: {"error": "text"}.
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error), str(error.get("type") or error.get("code") or "")
    if isinstance(error, str):
        return error, ""
    return (text.strip()[:300] or "no detail"), ""


def _retry_after(headers: dict[str, str]) -> float | None:
    value = {k.lower(): v for k, v in headers.items()}.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _hide(message: str, secret: str) -> str:
    return message.replace(secret, "***") if secret else message
