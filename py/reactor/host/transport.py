"""HTTP for the providers, through an injected `send` (reactor.http), so the page can back
it with fetch. `post_json` is the one place a provider's answer becomes data or a ProviderError
whose message says what to do — and never holds the API key.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..cancellation import CancelToken
from ..errors import AbortedError
from ..http import Send, urllib_send
from .errors import ProviderError
from .streaming import EventStream

__all__ = ["Send", "post_json", "post_stream", "urllib_send"]

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
                    f"{provider} streamed an event this host cannot read ({error!r}): "
                    f"{data[:200]!r}.",
                    provider=provider,
                    status=200,
                    kind="bad_response",
                ) from None

    arrived = False

    def chunk(text: str) -> None:
        nonlocal arrived
        arrived = True
        if not signal.aborted:  # after Stop, what still arrives is dropped
            hand_on(events.feed(text))

    try:
        status, answer_headers, text = await _post(
            send, url, headers, body, signal, provider, secret, chunk
        )
    except ProviderError as error:
        if error.kind != "unreachable" or not arrived:
            raise
        raise ProviderError(
            f"The answer was cut off: the connection to {provider} dropped before it "
            "finished. Send your message again to retry.",
            provider=provider,
            kind="cut_off",
            detail=error.detail,
        ) from None
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
        return await signal.race(
            send(
                "POST",
                url,
                {"content-type": "application/json", **headers},
                json.dumps(body),
                **extra,
            )
        )
    except (AbortedError, ProviderError):
        raise
    except Exception as error:  # OSError here; a JsException ("Failed to fetch") in the page
        raise ProviderError(
            _hide(
                f"{provider} at {url} could not be reached; check the address and your "
                "connection, then try again.",
                secret,
            ),
            provider=provider,
            kind="unreachable",
            detail=_hide(str(error), secret),
        ) from None


def _answer(
    status: int, answer_headers: dict[str, str], text: str, provider: str, secret: str
) -> dict[str, Any]:
    data = _decode(text)
    if 200 <= status < 300:
        if not isinstance(data, dict):
            raise ProviderError(
                f"{provider} answered {status} with something that is not a JSON object: "
                f"{text[:200]!r}.",
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
        detail=_hide(message, secret),
    )


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
