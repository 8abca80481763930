"""A model behind a provider's HTTP API: the one `complete()` every adapter shares — post the
conversation, stream it when asked (an answer in one piece still works), refuse an answer cut
off mid-stream — while each adapter (openai.py, anthropic.py) says only its wire format."""

from __future__ import annotations

from typing import Any, Protocol

from ..cancellation import CancelToken
from .errors import ProviderError
from .model import ModelRequest, ModelTurn
from .transport import Send, post_json, post_stream


class Stream(Protocol):
    """A provider's events read as they come (host/streaming.py)."""

    def event(self, kind: str, data: str) -> None: ...

    @property
    def complete(self) -> bool: ...


class WireModel:
    """What an adapter fills in: `provider`, `path`, `headers()`, `request_body()`,
    `parse_response()` for an answer in one piece, `new_stream()` and `streamed_turn()` for one
    that streams. The key stays with the caller: never in repr, never in an error."""

    provider = ""
    path = ""
    base_url: str
    stream: bool
    _send: Send
    _api_key: str

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def parse_response(self, data: dict[str, Any]) -> ModelTurn:
        raise NotImplementedError

    def new_stream(self, on_text: Any) -> Any:
        raise NotImplementedError

    def streamed_turn(self, stream: Any) -> ModelTurn:
        raise NotImplementedError

    async def complete(self, request: ModelRequest, signal: CancelToken) -> ModelTurn:
        url, body, headers = self.base_url + self.path, self.request_body(request), self.headers()
        provider, secret = self.provider, self._api_key
        if not self.stream:
            return self.parse_response(
                await post_json(
                    self._send, url, headers, body, signal=signal, provider=provider, secret=secret
                )
            )
        stream: Stream = self.new_stream(request.on_text or _ignore)
        whole = await post_stream(
            self._send,
            url,
            headers,
            {**body, "stream": True},
            signal=signal,
            provider=provider,
            secret=secret,
            on_event=stream.event,
        )
        if whole is not None:
            return self.parse_response(whole)
        if not stream.complete:
            raise ProviderError(
                f"The answer was cut off: {self.provider} ended its stream before it "
                "finished. Send your message again to retry.",
                provider=self.provider,
                status=200,
                kind="cut_off",
            )
        return self.streamed_turn(stream)


def _ignore(text: str) -> None:
    pass
