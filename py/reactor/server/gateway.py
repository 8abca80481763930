"""The site's model behind the server: the page's chat talks to it through this origin, and the
server adds the key and relays the provider's answer as it streams.

One route, in the configured provider's own wire format, so the page's adapters
(reactor.host.openai, reactor.host.anthropic) speak to it unchanged, without a key:
`POST /api/assistant/v1/chat/completions` (OpenAI's Chat Completions, and every server that
speaks it) or `POST /api/assistant/v1/messages` (Anthropic's Messages).

What passes: the configured model only (a request naming another is refused), the fields the
provider's request defines for a chat (anything else is a 422 naming it), `max_tokens` up to the
cap, a body up to its cap. Who: signed-in users, or anyone when `anonymous`; each within a number
of requests per minute and of tokens per UTC day, counted in the database from the usage the
provider reports, so every server process on one PostgreSQL shares them. The answer's events are
relayed one by one as they arrive; the person leaving (Stop, a closed page) closes the upstream
request at once. Every failure is one sentence for the person; the operator's log says which
provider error it was. The key goes only to the provider: no answer and no log line holds it.
"""

from __future__ import annotations

import asyncio
import codecs
import hashlib
import json
import logging
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..errors import ApiError, DeclarationError
from ..host.streaming import EventStream
from .api import EVENTS, Call, Reply, declare, error_answer
from .auth import Auth, User
from .database import Database

log = logging.getLogger("reactor.assistant")

PROVIDERS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
PATHS = {"openai": "/api/assistant/v1/chat/completions", "anthropic": "/api/assistant/v1/messages"}
UPSTREAM_PATHS = {"openai": "/chat/completions", "anthropic": "/v1/messages"}
ANTHROPIC_VERSION = "2023-06-01"
# The request fields a chat uses, as each provider's API reference defines them. Left out on
# purpose: what changes the site's cost or where its data goes (OpenAI's `store`, `service_tier`,
# `audio`; Anthropic's `mcp_servers`, `container`, `service_tier`).
FIELDS = {
    "openai": frozenset(
        {
            "model",
            "messages",
            "tools",
            "tool_choice",
            "parallel_tool_calls",
            "max_tokens",
            "max_completion_tokens",
            "temperature",
            "top_p",
            "stop",
            "stream",
            "stream_options",
            "presence_penalty",
            "frequency_penalty",
            "seed",
            "response_format",
            "logit_bias",
            "logprobs",
            "top_logprobs",
            "n",
            "reasoning_effort",
            "user",
        }
    ),  # fmt: skip
    "anthropic": frozenset(
        {
            "model",
            "messages",
            "system",
            "max_tokens",
            "tools",
            "tool_choice",
            "temperature",
            "top_p",
            "top_k",
            "stop_sequences",
            "stream",
            "metadata",
            "thinking",
        }
    ),  # fmt: skip
}
USAGE_TABLE = [
    "CREATE TABLE IF NOT EXISTS assistant_usage (who TEXT NOT NULL, period TEXT NOT NULL, "
    "requests INTEGER NOT NULL DEFAULT 0, tokens INTEGER NOT NULL DEFAULT 0, PRIMARY KEY "
    "(who, period))"
]
ANSWERS = {"application/json": {"schema": {"type": "object"}}, **EVENTS}
ALLOWANCE_USED = "You have used today's assistant allowance; it renews at 00:00 UTC."


@dataclass(frozen=True)
class AssistantConfig:
    """The site's model, as `reactor serve --model-provider … --model …` configures it."""

    provider: str
    model: str
    api_key: str = field(default="", repr=False)
    base_url: str = ""
    anonymous: bool = False
    limit_rpm: int = 20
    limit_tokens: int = 200_000
    max_tokens: int = 4096
    max_body: int = 2_000_000
    timeout: float = 120.0

    def __post_init__(self) -> None:
        def refuse(option: str, value: Any, rule: str) -> DeclarationError:
            return DeclarationError(rule, owner="assistant", field=option, value=value)

        if self.provider not in PROVIDERS:
            raise refuse(
                "--model-provider",
                self.provider,
                f"There is no model provider {self.provider[:40]!r}: set --model-provider "
                "(REACTOR_MODEL_PROVIDER) to openai or anthropic.",
            )
        if not self.model or len(self.model) > 200 or any(c.isspace() for c in self.model):
            raise refuse(
                "--model",
                self.model,
                "Name the site's model with --model (REACTOR_MODEL), for example gpt-4o-mini, "
                "claude-sonnet-4-5 or llama3.1: one word, no spaces.",
            )
        parts = urlsplit(self.url)
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or parts.query
            or parts.fragment
        ):
            raise refuse(
                "--model-base-url",
                self.base_url,
                "--model-base-url (REACTOR_MODEL_BASE_URL) must be an http:// or https:// "
                f"address such as http://127.0.0.1:11434/v1; {self.base_url[:80]!r} is not.",
            )
        if not self.api_key and (self.provider == "anthropic" or not self.base_url):
            raise refuse(
                "REACTOR_MODEL_API_KEY",
                None,
                f"The site's model needs its provider's key: set REACTOR_MODEL_API_KEY (or "
                f"{KEY_VARIABLES[self.provider]}) in the server's environment, never on the "
                "command line.",
            )
        for option, value, low, high in (
            ("--model-limit-rpm", self.limit_rpm, 1, 100_000),
            ("--model-limit-tokens", self.limit_tokens, 1, 10**12),
            ("--model-max-tokens", self.max_tokens, 1, 1_000_000),
        ):
            if not low <= value <= high:
                raise refuse(
                    option, value, f"{option} must be between {low} and {high}, not {value}."
                )

    @property
    def url(self) -> str:
        return (self.base_url or PROVIDERS[self.provider]).rstrip("/")

    @property
    def label(self) -> str:
        return f"{self.model} · via this site"

    def for_page(self) -> dict[str, Any]:
        """What boot.json tells the page (never the key nor the provider's address)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "label": self.label,
            "url": "/api/assistant",
            "maxTokens": self.max_tokens,
            "anonymous": self.anonymous,
        }


def check_reachable(config: AssistantConfig, timeout: float = 3.0) -> str:
    """ "" when the provider's host takes a connection, else the sentence saying what to set."""
    parts = urlsplit(config.url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
        return ""
    except OSError as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        return (
            f"the site's model at {config.url} cannot be reached ({reason}): start it, or point "
            "--model-base-url (REACTOR_MODEL_BASE_URL) at where it listens."
        )


class Refused(ApiError):
    """A request the gateway answers itself: the status, the person's sentence, its headers."""


class Allowance:
    """Requests per minute and tokens per UTC day, per user, in the shared database."""

    def __init__(self, database: Database, config: AssistantConfig) -> None:
        self.database, self.config = database, config
        database.migrate("assistant", USAGE_TABLE)

    def admit(self, who: str, now: float) -> None:
        """Count one request; Refused (429) when over either limit."""
        minute, day = _minute(now), _day(now)
        with self.database.transaction() as db:
            db.execute(
                "DELETE FROM assistant_usage WHERE who = ? AND period LIKE 'm:%' AND period < ?",
                (who, minute),
            )
            requests = db.execute(
                "INSERT INTO assistant_usage (who, period, requests) VALUES (?, ?, 1) ON "
                "CONFLICT (who, period) "
                "DO UPDATE SET requests = assistant_usage.requests + 1 RETURNING requests",
                (who, minute),
            ).fetchone()[0]
            row = db.execute(
                "SELECT tokens FROM assistant_usage WHERE who = ? AND period = ?", (who, day)
            ).fetchone()
        if row is not None and row[0] >= self.config.limit_tokens:
            raise Refused(429, ALLOWANCE_USED, retry_after=int(86_400 - now % 86_400) + 1)
        if requests > self.config.limit_rpm:
            wait = int(60 - now % 60) + 1
            raise Refused(
                429,
                f"You have sent {self.config.limit_rpm} messages to the assistant in the last "
                f"minute, its limit; wait {wait} seconds and send again.",
                retry_after=wait,
            )

    def spend(self, who: str, tokens: int, now: float) -> None:
        with self.database.transaction() as db:
            db.execute(
                "INSERT INTO assistant_usage (who, period, tokens) VALUES (?, ?, ?) ON CONFLICT "
                "(who, period) DO UPDATE SET tokens = assistant_usage.tokens + excluded.tokens",
                (who, _day(now), tokens),
            )


def _minute(now: float) -> str:
    return "m:" + time.strftime("%Y-%m-%dT%H:%M", time.gmtime(now))


def _day(now: float) -> str:
    return "d:" + time.strftime("%Y-%m-%d", time.gmtime(now))


class Gateway:
    """The assistant route of one app."""

    def __init__(self, config: AssistantConfig, database: Database, auth: Auth) -> None:
        self.config, self.auth = config, auth
        self.allowance = Allowance(database, config)
        # made once, ~10 ms: every request's client shares it
        self._tls = ssl.create_default_context()

    def routes(self) -> list[Route]:
        provider, config = self.config.provider, self.config
        who = (
            None
            if config.anonymous
            else self.auth.signed_in("Sign in at the top of the page to use this site's assistant.")
        )

        @declare(
            "Ask the site's model "
            f"({'OpenAI Chat Completions' if provider == 'openai' else 'Anthropic Messages'} "
            "wire format; the server adds the key and relays the answer as it streams)",
            body=self.request_schema(),
            body_limit=config.max_body,
            too_large=self._too_large(),
            replies={200: Reply(content=ANSWERS)},
            refusals={
                **({} if config.anonymous else {401: "Nobody is signed in."}),
                429: "Past the person's requests per minute or tokens per day, or the provider's "
                "rate limit.",
                502: "The provider refused the key, the model or the conversation, or failed.",
                503: "The provider is overloaded.",
            },
            who=who,
        )
        async def assistant(call: Call) -> Response:
            person = _who(call.user, call.request)
            upstream = self.upstream_body(call.body, person)
            await run_in_threadpool(self.allowance.admit, person, time.time())
            return Relay(self, upstream, person)

        return [Route(PATHS[provider], assistant, methods=["POST"])]

    def request_schema(self) -> dict[str, Any]:
        """What the route takes: the provider's chat fields, no other; the site's model; one
        answer; `max_tokens` up to the site's cap."""
        config, caps = self.config, ("max_tokens", "max_completion_tokens")
        properties: dict[str, Any] = {name: {} for name in sorted(FIELDS[config.provider])}
        properties |= {
            "model": {
                "const": config.model,
                "x-refusal": f"This site's assistant is {config.model}; the request named "
                f"{{value}}.",
            },
            "messages": {
                "type": "array",
                "minItems": 1,
                "x-refusal": "The request needs its messages, a list that is not empty.",
            },
            "stream": {"type": "boolean", "x-refusal": "stream must be true or false."},
            **{
                cap: {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": config.max_tokens,
                    "x-refusal": f"{cap} must be a whole number from 1 to {config.max_tokens} "
                    "here.",
                }
                for cap in caps
                if cap in properties
            },
        }
        if config.provider == "openai":
            properties["n"] = {
                "const": 1,
                "x-refusal": "This site's assistant gives one answer per request: n must be 1.",
            }
        return {
            "type": "object",
            "required": ["messages"],
            "properties": properties,
            "additionalProperties": False,
            "x-unknown": "This site's assistant does not pass on the field {field}.",
        }

    def upstream_body(self, body: dict[str, Any], who: str) -> dict[str, Any]:
        """The request as the provider gets it (the route's declaration has checked it): the
        site's model, a `max_tokens` when it names none, the person as a hash the provider sees."""
        provider, config = self.config.provider, self.config
        caps = ("max_tokens", "max_completion_tokens") if provider == "openai" else ("max_tokens",)
        sent = {**body, "model": config.model}
        if not any(cap in body for cap in caps):
            sent["max_tokens"] = config.max_tokens
        # the provider's abuse checks see no name
        user_id = hashlib.sha256(who.encode()).hexdigest()[:32]
        if provider == "openai":
            sent["user"] = user_id
            if sent.get("stream"):  # the usage the daily allowance counts comes as the last event
                options = sent.get("stream_options")
                sent["stream_options"] = {
                    **(options if isinstance(options, dict) else {}),
                    "include_usage": True,
                }
        else:
            sent["metadata"] = {"user_id": user_id}
        return sent

    def upstream_headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept-encoding": "identity"}
        if self.config.provider == "anthropic":
            headers |= {"x-api-key": self.config.api_key, "anthropic-version": ANTHROPIC_VERSION}
        elif self.config.api_key:
            headers["authorization"] = f"Bearer {self.config.api_key}"
        return headers

    def client(self) -> httpx.AsyncClient:
        """A client for one request (cheap: the TLS context is made once)."""
        timeout = httpx.Timeout(self.config.timeout, connect=10.0)
        return httpx.AsyncClient(verify=self._tls, timeout=timeout, trust_env=False)

    def _too_large(self) -> str:
        return (
            "The conversation is too long for this site's assistant (over "
            f"{self.config.max_body} bytes); start a new one."
        )

    def hide(self, text: str) -> str:
        return text.replace(self.config.api_key, "***") if self.config.api_key else text


def _who(user: User | None, request: Request) -> str:
    if user is not None:
        return f"user:{user.username}"
    return f"address:{request.client.host if request.client else 'unknown'}"


class Relay(Response):
    """The provider's answer, passed on as it arrives; the person leaving closes the upstream."""

    def __init__(self, gateway: Gateway, body: dict[str, Any], who: str) -> None:
        super().__init__()
        self.gateway, self.sent, self.who = gateway, body, who
        self.config = gateway.config
        self.usage = Usage(self.config.provider)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        relay = asyncio.ensure_future(self.relay(send))
        left = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait({relay, left}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (relay, left):
                task.cancel()
            await asyncio.gather(relay, left, return_exceptions=True)
        if left.done() and not left.cancelled() and not relay.done():
            log.info(
                "assistant: %s left before the answer ended; the provider's request was closed",
                self.who,
            )
        if relay.done() and not relay.cancelled() and relay.exception() is not None:
            raise relay.exception()  # type: ignore[misc]
        if self.usage.tokens:  # a refusal or an answer without usage spends nothing
            await run_in_threadpool(
                self.gateway.allowance.spend, self.who, self.usage.tokens, time.time()
            )

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
                    content=json.dumps(self.sent).encode(),
                ) as upstream,
            ):
                if upstream.status_code >= 300:
                    text = (await _read_capped(upstream, 64_000)).decode("utf-8", "replace")
                    status, sentence, retry = self.refusal(
                        upstream.status_code, upstream.headers, text
                    )
                    await _send_json(send, status, sentence, retry)
                    return
                kind = upstream.headers.get("content-type", "")
                if "text/event-stream" not in kind:
                    text = (await _read_capped(upstream, 16_000_000)).decode("utf-8", "replace")
                    self.usage.read_whole(text)
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
                await _send_json(send, 502, sentence, None)
                return
            await self.send_events(send, [self.failure_event(self.cut_sentence())])
        if started:
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
        """An error event in the provider's own format, holding the person's sentence."""
        if self.config.provider == "openai":
            return _event_text(
                "message",
                json.dumps({"error": {"type": "reactor_gateway", "message": sentence}}),
                "openai",
            )
        payload = {"type": "error", "error": {"type": "api_error", "message": sentence}}
        return _event_text("error", json.dumps(payload), "anthropic")

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


class Usage:
    """The tokens an answer used, as the provider reports them, and whether it ended as answers
    end."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.input = self.output = 0
        self.complete = False

    @property
    def tokens(self) -> int:
        return self.input + self.output

    def read_event(self, kind: str, data: str) -> str | None:
        """Note what the event says; the provider's error text when it is an error event."""
        if data.strip() == "[DONE]":
            self.complete = True
            return None
        try:
            event = json.loads(data)
        except ValueError:
            return None
        if not isinstance(event, dict):
            return None
        if self.provider == "openai":
            if event.get("error"):
                return json.dumps(event["error"])
            self._openai(event.get("usage"))
            if any(
                isinstance(c, dict) and c.get("finish_reason") for c in event.get("choices") or []
            ):
                self.complete = True
            return None
        kind = event.get("type", kind)
        if kind == "error":
            return json.dumps(event.get("error"))
        if kind == "message_start":
            usage = (event.get("message") or {}).get("usage") or {}
            self.input = _count(usage.get("input_tokens"))
            self.output = _count(usage.get("output_tokens"))
        elif kind == "message_delta":
            self.output = max(self.output, _count((event.get("usage") or {}).get("output_tokens")))
        elif kind == "message_stop":
            self.complete = True
        return None

    def read_whole(self, text: str) -> None:
        try:
            answer = json.loads(text)
        except ValueError:
            return
        if isinstance(answer, dict):
            usage = answer.get("usage")
            if self.provider == "openai":
                self._openai(usage)
            elif isinstance(usage, dict):
                self.input, self.output = (
                    _count(usage.get("input_tokens")),
                    _count(usage.get("output_tokens")),
                )

    def _openai(self, usage: Any) -> None:
        if isinstance(usage, dict):
            self.input, self.output = (
                _count(usage.get("prompt_tokens")),
                _count(usage.get("completion_tokens")),
            )


def _count(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0
