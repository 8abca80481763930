"""The provider's answer passed on as it streams; the person leaving closes the upstream request."""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
from typing import Protocol

import httpx
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ...errors import ApiError, DatabaseError
from ...host.streaming import EventStream
from ..api import error_answer
from ..metrics import Metrics, metrics_of
from .allowance import Allowance, Reservation
from .config import UPSTREAM_PATHS, AssistantConfig
from .kept import KeptStream, KeptStreams
from .usage import Usage

log = logging.getLogger("reactor.assistant")


class Upstream(Protocol):
    """What the relay needs of the gateway that made it (route.py's Gateway)."""

    config: AssistantConfig
    allowance: Allowance
    kept: KeptStreams

    async def hold(self, kept: KeptStream) -> None: ...
    def client(self) -> httpx.AsyncClient: ...
    def upstream_headers(self) -> dict[str, str]: ...
    def hide(self, text: str) -> str: ...


class Relay(Response):
    """The provider's answer, passed on as it arrives; the person leaving closes the upstream."""

    def __init__(
        self, gateway: Upstream, content: bytes, reservation: Reservation, thread: str = ""
    ) -> None:
        super().__init__()
        self.gateway, self.content, self.reservation = gateway, content, reservation
        self.who, self.config, self.thread = reservation.who, gateway.config, thread
        self.usage = Usage(self.config.provider)
        self.charged: tuple[int, int] | None = None  # once settled: input and output tokens
        self.metrics: Metrics | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.metrics = metrics_of(scope)
        if self.thread:  # kept for its thread: the page leaving does not end it (kept.py)
            kept = self.gateway.kept.begin((self.who, self.thread), self.relay_and_settle)
            await self.gateway.hold(kept)
            await kept.read(send, receive)
            return
        relay = asyncio.ensure_future(self.relay(send))
        left = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait({relay, left}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (relay, left):
                task.cancel()
            await asyncio.gather(relay, left, return_exceptions=True)
            await self.settle()  # the person left, or the relay failed: not settled yet
        if left.done() and not left.cancelled() and not relay.done():
            log.info(
                "assistant: %s left before the answer ended; the provider's request was closed",
                self.who,
            )
        if relay.done() and not relay.cancelled() and relay.exception() is not None:
            raise relay.exception()  # type: ignore[misc]

    async def settle(self, *, refused: bool = False) -> None:
        """Charge the answer, once: nothing when the provider refused it or could not be
        reached; the provider's usage when it reported the whole answer's; otherwise, for input
        and for output, the larger of the reservation and what the provider reported so far.
        Why the reservation when the person closes the stream early, rather than an estimate of
        what was streamed: the provider goes on generating (and billing) until it sees the close,
        OpenAI's usage comes only in its last event, and text cut into chunks is no count of
        tokens a person cannot game (dense text, many tokens a chunk); the bound is the one
        number that holds. A Stop thus costs up to the answer's max_tokens. Settled before the
        answer's last byte, so the person's next request sees it."""
        if self.charged is not None:
            return
        reservation = self.reservation
        self.charged = (
            (0, 0) if refused else self.usage.charged(reservation.input, reservation.output)
        )
        try:
            await run_in_threadpool(self.gateway.allowance.settle, reservation, sum(self.charged))
        except DatabaseError as error:  # the reservation stays charged: never less than due
            log.warning("assistant: %s's answer could not be settled: %s", self.who, error)
            self.charged = reservation.input, reservation.output
        if self.metrics is not None:
            self.metrics.charged(*self.charged)

    async def relay_and_settle(self, send: Send) -> None:
        """The answer of a kept stream (kept.py): relayed, and settled however it ends."""
        try:
            await self.relay(send)
        finally:
            await self.settle()

    async def relay(self, send: Send) -> None:
        gateway, config = self.gateway, self.config
        url = config.url + UPSTREAM_PATHS[config.provider]
        started = False
        try:
            async with (
                gateway.client() as client,
                client.stream(
                    "POST",
                    url,
                    headers=gateway.upstream_headers(),
                    content=self.content,
                ) as upstream,
            ):
                if upstream.status_code >= 300:
                    text = (await _read_capped(upstream, 64_000)).decode("utf-8", "replace")
                    status, sentence, retry = self.refusal(
                        upstream.status_code, upstream.headers, text
                    )
                    await self.settle(refused=True)
                    await _send_json(send, status, sentence, retry)
                    return
                kind = upstream.headers.get("content-type", "")
                if "text/event-stream" not in kind:
                    text = (await _read_capped(upstream, 16_000_000)).decode("utf-8", "replace")
                    self.usage.read_whole(text)
                    await self.settle()
                    await _send_whole(send, upstream.status_code, text, kind or "application/json")
                    return
                await send(
                    {
                        "type": "http.response.start",
                        "status": 200,
                        "headers": [
                            (b"content-type", b"text/event-stream; charset=utf-8"),
                            (b"cache-control", b"no-store"),
                            (b"x-accel-buffering", b"no"),
                        ],
                    }
                )
                started = True
                await self.pass_events(upstream, send)
        except (httpx.TransportError, OSError) as error:
            cut = "stream cut" if started else "unreachable"
            log.warning(
                "assistant: the provider at %s %s: %s", url, cut, self.gateway.hide(repr(error))
            )
            if not started:
                sentence = "This site's assistant could not reach its model; try again in a moment."
                await self.settle(refused=True)
                await _send_json(send, 502, sentence, None)
                return
            await self.send_events(send, [self.failure_event(self.cut_sentence())])
        if started:
            await self.settle()
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def pass_events(self, upstream: httpx.Response, send: Send) -> None:
        events, decoder = EventStream(), codecs.getincrementaldecoder("utf-8")("replace")
        async for chunk in upstream.aiter_bytes():
            out: list[str] = []
            for kind, data in events.feed(decoder.decode(chunk)):
                error = self.usage.read_event(kind, data)
                if error is not None:
                    log.warning(
                        "assistant: the provider stopped mid-answer: %s",
                        self.gateway.hide(error[:500]),
                    )
                    await self.send_events(
                        send, out + [self.failure_event(self.error_sentence(error))]
                    )
                    return
                out.append(_event_text(kind, data, self.config.provider))
            if out:
                await self.send_events(send, out)
        for kind, data in events.close():
            self.usage.read_event(kind, data)
            await self.send_events(send, [_event_text(kind, data, self.config.provider)])
        if not self.usage.complete:
            log.warning("assistant: the provider's stream ended before its answer was complete")
            await self.send_events(send, [self.failure_event(self.cut_sentence())])

    async def send_events(self, send: Send, texts: list[str]) -> None:
        await send(
            {"type": "http.response.body", "body": "".join(texts).encode(), "more_body": True}
        )

    def failure_event(self, sentence: str) -> str:
        return failure_event(self.config.provider, sentence)

    @staticmethod
    def cut_sentence() -> str:
        return (
            "The answer was cut off: the site's model stopped sending before it finished. Send "
            "your message again to retry."
        )

    @staticmethod
    def error_sentence(error: str) -> str:
        if "overloaded" in error.lower():
            return (
                "The site's model is overloaded and stopped mid-answer; send your message again "
                "in a minute."
            )
        return "The site's model failed mid-answer; send your message again to retry."

    def refusal(
        self, status: int, headers: httpx.Headers, text: str
    ) -> tuple[int, str, int | None]:
        """A provider's error as the person reads it: (status, sentence, Retry-After); the log says
        which."""
        log.warning(
            "assistant: the provider at %s answered %s: %s",
            self.config.url,
            status,
            self.gateway.hide(text.strip()[:500]),
        )
        retry = _seconds(headers.get("retry-after"))
        if status in (401, 403):
            return (
                502,
                "This site's assistant is not working: its provider refused the site's key. "
                "The site's operator can see why in the server's log.",
                None,
            )
        if status == 404:
            return (
                502,
                "This site's assistant is not working: its provider does not know the site's "
                "model. The site's operator can see why in the server's log.",
                None,
            )
        if status == 429:
            wait = f"wait {retry} seconds and try again" if retry else "wait a minute and try again"
            return (
                429,
                f"This site's assistant is busy (its provider's rate limit); {wait}.",
                retry or 60,
            )
        if status in (503, 529):
            return 503, "This site's model is overloaded right now; try again in a minute.", retry
        if 400 <= status < 500:
            return (
                502,
                "This site's model could not take this conversation; start a new one, or "
                "tell the site's operator.",
                None,
            )
        return 502, "This site's model failed to answer; try again in a moment.", None


def failure_event(provider: str, sentence: str) -> str:
    """An error event in the provider's own format, holding the person's sentence."""
    if provider == "openai":
        return _event_text(
            "message",
            json.dumps({"error": {"type": "reactor_gateway", "message": sentence}}),
            "openai",
        )
    payload = {"type": "error", "error": {"type": "api_error", "message": sentence}}
    return _event_text("error", json.dumps(payload), "anthropic")


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _read_capped(upstream: httpx.Response, cap: int) -> bytes:
    data = bytearray()
    async for chunk in upstream.aiter_bytes():
        data += chunk
        if len(data) > cap:
            break
    return bytes(data[:cap])


async def _send_json(send: Send, status: int, sentence: str, retry_after: int | None) -> None:
    response = error_answer(ApiError(status, sentence, retry_after=retry_after))
    await send({"type": "http.response.start", "status": status, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body, "more_body": False})


async def _send_whole(send: Send, status: int, text: str, kind: str) -> None:
    body = text.encode()
    headers = [
        (b"content-type", kind.encode("latin-1")),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _event_text(kind: str, data: str, provider: str) -> str:
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return (
        lines if provider == "openai" or kind == "message" else f"event: {kind}\n{lines}"
    ) + "\n"


def _seconds(value: str | None) -> int | None:
    try:
        return max(1, int(float(value))) if value else None
    except ValueError:
        return None
