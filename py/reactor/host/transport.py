"""HTTP for the providers, through an injected `send`, so the page can back it with fetch.

    async send(method, url, headers, body_text) -> (status, headers, body_text)

No network library is imported here: in the page `send` wraps the browser's fetch; on
CPython `urllib_send` does. `post_json` is the one place a provider's answer becomes data or
a ProviderError whose message says what to do — and never holds the API key.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable

from ..cancellation import CancelToken
from ..errors import AbortedError
from .errors import ProviderError

Send = Callable[[str, str, dict[str, str], str | None], Awaitable[tuple[int, dict[str, str], str]]]

_KINDS = {400: "invalid_request", 401: "authentication", 403: "permission", 404: "not_found",
          413: "request_too_large", 429: "rate_limit", 529: "overloaded"}
_ADVICE = {
    "authentication": "Check the API key.",
    "permission": "The key may not use this model or endpoint.",
    "not_found": "Check the base URL and the model name.",
    "rate_limit": "Wait a moment and try again.",
    "overloaded": "The provider is overloaded; try again shortly.",
    "server": "The provider failed; try again shortly.",
}


async def post_json(
    send: Send, url: str, headers: dict[str, str], body: dict[str, Any], *,
    signal: CancelToken, provider: str, secret: str = "",
) -> dict[str, Any]:
    """POST `body` as JSON and return the decoded answer; raise ProviderError or AbortedError."""
    try:
        status, answer_headers, text = await signal.race(
            send("POST", url, {"content-type": "application/json", **headers}, json.dumps(body))
        )
    except AbortedError:
        raise
    except Exception as error:  # OSError here; a JsException ("Failed to fetch") in the page
        raise ProviderError(_hide(f"{provider} at {url} could not be reached: {error}.", secret),
                            provider=provider, kind="unreachable") from None
    data = _decode(text)
    if 200 <= status < 300:
        if not isinstance(data, dict):
            raise ProviderError(f"{provider} answered {status} with something that is not a JSON object: "
                                f"{text[:200]!r}.", provider=provider, status=status, kind="bad_response")
        return data
    kind = _KINDS.get(status, "server" if status >= 500 else "error")
    message, provider_kind = _error_detail(data, text)
    retry_after = _retry_after(answer_headers)
    advice = _ADVICE.get(kind, "")
    if retry_after is not None and kind in ("rate_limit", "overloaded"):
        advice = f"Wait {retry_after:g} seconds and try again."
    said = f"{provider} answered {status} ({provider_kind or kind}): {message}"
    raise ProviderError(_hide(f"{said.rstrip('.')}. {advice}".strip(), secret),
                        provider=provider, status=status, kind=kind, retry_after=retry_after)


async def urllib_send(method: str, url: str, headers: dict[str, str], body: str | None) -> tuple[int, dict[str, str], str]:
    """A `send` for CPython (tests, scripts). Error statuses are returned, not raised."""
    return await asyncio.to_thread(_urllib_exchange, method, url, headers, body)


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
