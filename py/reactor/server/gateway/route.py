"""The site's model behind the server: the page's chat talks to it through this origin, and the
server adds the key and relays the provider's answer as it streams.

One route, in the configured provider's own wire format, so the page's adapters
(reactor.host.openai, reactor.host.anthropic) speak to it unchanged, without a key:
`POST /api/assistant/v1/chat/completions` (OpenAI's Chat Completions, and every server that
speaks it) or `POST /api/assistant/v1/messages` (Anthropic's Messages).

What passes: the configured model only (a request naming another is refused), the fields the
provider's request defines for a chat (anything else is a 422 naming it), `max_tokens` up to the
cap, a body up to its cap. Who: signed-in users, or anyone when `anonymous`; each within a number
of requests per minute and of tokens per UTC day, counted in the database (so every server
process on one PostgreSQL shares them): a request's bound is charged when it is admitted and
settled to the usage the provider reports, so closing the stream early escapes nothing
(allowance.py). The answer's events are
relayed one by one as they arrive; the person leaving (Stop, a closed page) closes the upstream
request at once. Every failure is one sentence for the person; the operator's log says which
provider error it was. The key goes only to the provider: no answer and no log line holds it."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import ssl
import time
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...errors import ApiError, DatabaseError
from ..api import EVENTS, Call, Reply, declare, routes_of
from ..auth.sessions import Auth, User, signed_in
from ..database import Database
from .allowance import Allowance, input_estimate
from .config import ANTHROPIC_VERSION, FIELDS, PATHS, AssistantConfig
from .kept import KeptStream, KeptStreams
from .relay import Relay, failure_event
from .shared import SharedStreams

ANSWERS = {"application/json": {"schema": {"type": "object"}}, **EVENTS}
THREAD_HEADER = "x-reactor-thread"  # the thread a page's request answers: its reply is kept
THREAD = re.compile(r"[A-Za-z0-9_-]{1,64}")
STREAMS = "/api/assistant/streams/{thread}"
ASK_SIGN_IN = "Sign in at the top of the page to use this site's assistant."
log = logging.getLogger("reactor.assistant")


class Gateway:
    """The assistant route of one app."""

    def __init__(self, config: AssistantConfig, database: Database, auth: Auth) -> None:
        self.config, self.auth = config, auth
        self.allowance = Allowance(database, config)
        self.kept = KeptStreams(config.reattach_seconds)
        # several processes on one PostgreSQL: each re-attaches to the others' replies (shared.py)
        self.shared = (
            SharedStreams(database, self.kept, self._cut_event, config.timeout + 5.0)
            if database.kind == "postgresql"
            else None
        )
        # made once, ~10 ms: every request's client shares it
        self._tls = ssl.create_default_context()

    def routes(self) -> list[Route]:
        """The assistant's route, then the re-attach and stop of a kept answer. The assistant's
        declaration is this app's: its path, summary, body schema and limit, and whether it asks
        for a sign-in all come from the configured provider and caps (`AssistantConfig`)."""
        provider, config = self.config.provider, self.config
        ask = declare(
            "POST",
            PATHS[provider],
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
            who=None if config.anonymous else self.auth.signed_in(ASK_SIGN_IN),
        )(assistant)
        gone = (
            "This site keeps no answer coming for that conversation now (it ended more than "
            f"{config.reattach_seconds:g} seconds ago, or the server process giving it stopped)."
        )
        services = GatewayServices(self, self.auth, gone)
        return routes_of(ask, reattach, stop, services=services)

    def streaming(self, username: str, thread: str) -> bool:
        """Whether an answer is kept for the person's thread (the page re-attaches to it), by
        this process or another one alive; called off the event loop (it may read the database)."""
        key = (f"user:{username}", thread)
        if self.shared is not None:
            try:
                if self.shared.elsewhere_now(key):
                    return True
            except DatabaseError:  # as far as this process knows
                pass
        return self.kept.has(*key)

    def share(self, relay: Any, bus: Any) -> None:
        """The page bus of several processes (server/agents/bus.py): replies kept by any of them
        are re-attached to and stopped from this one, and this one's from them."""
        if self.shared is not None and bus is not None:
            self.shared.join(relay, bus)

    async def hold(self, kept: KeptStream) -> None:
        """The other processes learn that this one holds `kept` (when there are others)."""
        if self.shared is not None:
            try:
                await self.shared.hold(kept)
            except DatabaseError as error:  # kept here all the same: a reload here re-attaches
                log.warning("assistant: the other processes could not learn of a reply: %s", error)

    def _cut_event(self) -> bytes:
        """What ends a reply another process held when that process stopped mid-answer."""
        sentence = (
            "The answer was cut off: the server process giving it stopped before it finished. "
            "Send your message again to retry."
        )
        return failure_event(self.config.provider, sentence).encode()

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


@dataclass(frozen=True)
class GatewayServices:
    """What the handlers work with, one set per app: they take it from the call
    (`call.services`, routes_of)."""

    gateway: Gateway
    auth: Auth
    gone: str  # the 404's sentence: no answer is kept for the thread (names reattach_seconds)


def _gateway(call: Call) -> GatewayServices:
    services: GatewayServices = call.services
    return services


SIGNED_IN = signed_in("Sign in to reach the answer of your conversation.")


async def assistant(call: Call) -> Response:
    """Relay the request to the provider, once the person's allowance admits it (declared per
    app: Gateway.routes)."""
    gateway = _gateway(call).gateway
    person = _who(call.user, call.request)
    upstream = gateway.upstream_body(call.body, person)
    content = json.dumps(upstream).encode()
    reservation = await run_in_threadpool(
        gateway.allowance.admit,
        person,
        time.time(),
        input_estimate(content),
        _bound(upstream),
    )
    thread = call.request.headers.get(THREAD_HEADER, "")
    kept = call.user is not None and THREAD.fullmatch(thread) is not None
    return Relay(gateway, content, reservation, thread if kept else "")


@declare(
    "GET",
    STREAMS,
    "Re-attach to the answer the site's model is giving in one of the person's "
    "conversations (kept while it streams): from the event after `Last-Event-ID`, the "
    "rest as it comes",
    path={"thread": {"type": "string", "pattern": f"^{THREAD.pattern}$"}},
    replies={200: Reply(content=ANSWERS)},
    refusals={401: "Nobody is signed in.", 404: "No answer is kept for the thread."},
    who=SIGNED_IN,
)
async def reattach(call: Call) -> Response:
    services = _gateway(call)
    gateway, key = services.gateway, (_who(call.user, call.request), call.path["thread"])
    after = call.request.headers.get("last-event-id", "0")
    start = int(after) if after.isdigit() and len(after) < 10 else 0
    # the newest reply of the thread may be another process's (shared.py)
    holder = "" if gateway.shared is None else await gateway.shared.elsewhere(key)
    if gateway.shared is not None and holder:
        return await gateway.shared.read(holder, key, start, services.gone)
    kept = gateway.kept.get(key)
    if kept is None:
        raise ApiError(404, services.gone, field="thread")
    return _Reattached(kept, start)


@declare(
    "DELETE",
    STREAMS,
    "Stop the answer the site's model is giving in one of the person's conversations: "
    "the provider's request is closed",
    path={"thread": {"type": "string", "pattern": f"^{THREAD.pattern}$"}},
    replies={
        200: Reply(
            {
                "type": "object",
                "required": ["stopped"],
                "properties": {"stopped": {"type": "string"}},
            }
        )
    },
    refusals={401: "Nobody is signed in.", 404: "No answer is kept for the thread."},
    who=SIGNED_IN,
)
async def stop(call: Call) -> Any:
    services = _gateway(call)
    gateway, key = services.gateway, (_who(call.user, call.request), call.path["thread"])
    holder = "" if gateway.shared is None else await gateway.shared.elsewhere(key)
    if gateway.shared is not None and holder:
        await gateway.shared.stop(holder, key)
        return {"stopped": call.path["thread"]}
    kept = gateway.kept.get(key)
    if kept is None:
        raise ApiError(404, services.gone, field="thread")
    kept.stop()
    return {"stopped": call.path["thread"]}


def _bound(sent: dict[str, Any]) -> int:
    """The most output tokens the provider may answer with: the request's cap, as sent."""
    return max(
        (v for k, v in sent.items() if k in ("max_tokens", "max_completion_tokens")), default=0
    )


def _who(user: User | None, request: Request) -> str:
    if user is not None:
        return f"user:{user.username}"
    return f"address:{request.client.host if request.client else 'unknown'}"


class _Reattached(Response):
    """A kept answer, read from the chunk after `after`."""

    def __init__(self, kept: Any, after: int) -> None:
        super().__init__()
        self.kept, self.after = kept, after

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.kept.read(send, receive, self.after)
