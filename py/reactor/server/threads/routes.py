"""The routes of a signed-in person's threads: list, read, rename, delete, and the page's appends.

Each answers only the signed-in person's own threads: another person's thread is a 404 in the
same words as one that does not exist. Writes are authenticated and guarded as every write is
(server/auth/protection.py); an agent token is refused here as everywhere but /mcp, so agents
write no chat threads.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..api import NO_STORE, Call, Endpoint, Reply, declare, routes_of
from ..auth.sessions import Auth, signed_in
from .store import CURSOR, ID_PATTERN, ThreadLimits, ThreadStore, megabytes

PURGE_EVERY = 3600.0  # seconds between two purges of old threads (with --threads-keep-days)
# Text that is not blank, with no control characters.
TITLE_PATTERN = "^[^\\u0000-\\u001f\\u007f]*[^\\u0000-\\u0020\\u007f][^\\u0000-\\u001f\\u007f]*$"
TAB = {
    "type": "string",
    "pattern": "^[A-Za-z0-9_-]{1,64}$",
    "x-refusal": "tab is the page's own name for its tab: 1 to 64 letters, digits, _ or -.",
}
TEXT = {"type": "string", "maxLength": 1_000_000}
# The provider-neutral conversation (reactor.host.model): what the model saw.
MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"enum": ["user", "assistant", "tool"]},
        "content": TEXT,
        "tool_calls": {
            "type": "array",
            "maxItems": 64,
            "items": {
                "type": "object",
                "required": ["id", "name"],
                "properties": {
                    "id": {"type": "string", "maxLength": 200},
                    "name": {"type": "string", "maxLength": 200},
                    "arguments": {},
                },
                "additionalProperties": False,
            },
        },
        "tool_call_id": {"type": "string", "maxLength": 200},
        "name": {"type": "string", "maxLength": 200},
        "result": {"type": "object"},
    },
    "additionalProperties": False,
    "allOf": [
        {"if": {"properties": {"role": {"const": "user"}}}, "then": {"required": ["content"]}},
        {
            "if": {"properties": {"role": {"const": "tool"}}},
            "then": {"required": ["tool_call_id", "result"]},
        },
    ],
}
# What the person saw, as the chat draws it (web/chat.js): messages, tool cards, approvals,
# notes. Never the model's settings: there is no item for them.
ITEM_TYPES = [
    "message",
    "tool_call.started",
    "tool_call.approved",
    "tool_call.finished",
    "tool_call.failed",
    "tool_call.denied",
    "approval",
    "stopped",
    "error",
    "interrupted",
]
ITEM = {
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"enum": ITEM_TYPES}},
}
TURN_FIELDS = {
    "messages": {
        "type": "array",
        "items": MESSAGE,
        "x-refusal": "messages is a list of the conversation's messages, each "
        '{"role": "user" | "assistant" | "tool", …}: {problems}.',
    },
    "items": {
        "type": "array",
        "items": ITEM,
        "x-refusal": 'items is a list of what the chat drew, each {"type": …} of '
        f"{', '.join(ITEM_TYPES)}: {{problems}}.",
    },
    "answering": {"type": "boolean"},
    "tab": TAB,
}
CREATE = {
    "type": "object",
    "required": ["messages", "items", "tab"],
    "properties": {**TURN_FIELDS, "title": {"type": "string", "maxLength": 120}},
    "additionalProperties": False,
    "x-unknown": "A new conversation takes messages, items, answering, tab and title; not {field}.",
}
APPEND = {
    "type": "object",
    "required": ["version", "messages", "items", "tab"],
    "properties": {
        # a version the table can hold (INTEGER: 32 bits on PostgreSQL)
        "version": {"type": "integer", "minimum": 1, "maximum": 2_147_483_647},
        "start": {"type": "boolean"},
        **TURN_FIELDS,
    },
    "additionalProperties": False,
    "x-unknown": "A turn takes version, start, messages, items, answering and tab; not {field}.",
}
TITLE = {
    "type": "object",
    "required": ["title"],
    "properties": {
        "title": {
            "type": "string",
            "minLength": 1,
            "maxLength": 120,
            "pattern": TITLE_PATTERN,
            "x-refusal": "A title is 1 to 120 characters of text, not blank, no control "
            "characters.",
        }
    },
    "additionalProperties": False,
    "x-unknown": 'Send {"title": "…"}: only the title can be changed.',
}
SUMMARY: dict[str, Any] = {
    "type": "object",
    "required": ["id", "title", "created", "updated", "version", "size", "messages", "answering"],
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "created": {"type": "number"},
        "updated": {"type": "number"},
        "version": {"type": "integer"},
        "size": {"type": "integer"},
        "messages": {"type": "integer"},
        "answering": {"type": "boolean"},
    },
}
THREAD = {
    "type": "object",
    "required": [*SUMMARY["required"], "items", "streaming"],
    "properties": {
        **SUMMARY["properties"],
        "answering": {
            "anyOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["tab", "since", "stale"],
                    "properties": {
                        "tab": {"type": "string"},
                        "since": {"type": "number"},
                        "stale": {"type": "boolean"},
                    },
                },
            ]
        },
        "messages": {"type": "array", "items": {"type": "object"}},
        "items": {"type": "array", "items": {"type": "object"}},
        "streaming": {
            "type": "boolean",
            "description": "Whether the site's model is answering in it now: a reloaded page "
            "re-attaches to the answer (GET /api/assistant/streams/{thread}).",
        },
    },
}
LIMITS = {
    "type": "object",
    "required": ["threads", "threadBytes", "turnBytes", "keepDays"],
    "properties": {
        "threads": {"type": "integer"},
        "threadBytes": {"type": "integer"},
        "turnBytes": {"type": "integer"},
        "keepDays": {"type": ["number", "null"]},
    },
}
LISTED = {
    "type": "object",
    "required": ["threads", "next", "count", "limits"],
    "properties": {
        "threads": {"type": "array", "items": SUMMARY},
        "next": {"type": ["string", "null"]},
        "count": {"type": "integer"},
        "limits": LIMITS,
    },
}
APPENDED = {
    "type": "object",
    "required": ["version", "updated"],
    "properties": {"version": {"type": "integer"}, "updated": {"type": "number"}},
}
# A 409: what the conversation is now (a stale version), another tab answering, or a limit.
CONFLICT = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {"type": "string"},
        "version": {"type": "integer"},
        "current": SUMMARY,
        "answering": {"type": "boolean"},
        "limit": {"enum": ["threads", "threadBytes"]},
    },
}
THREAD_ID = {"type": "string", "pattern": ID_PATTERN}
SIGN_IN = "Sign in to keep your conversations on this site."
NOT_THEIRS = "The person has no conversation with that id (another person's is not theirs)."


class Threads:
    """The threads of one app: the store, its routes, and the purge of old ones."""

    def __init__(
        self,
        store: ThreadStore,
        auth: Auth,
        streaming: Callable[[str, str], bool] | None = None,
    ) -> None:
        self.store, self.auth = store, auth
        # whether the site's model is answering in a thread now (server/gateway/kept.py)
        self.streaming = streaming or (lambda username, thread: False)
        self.limits: ThreadLimits = store.limits
        self._purged = 0.0

    def purge_when_due(self) -> None:
        """Delete threads untouched for the days kept, at most once per PURGE_EVERY seconds."""
        now = time.monotonic()
        if self.limits.keep_days is None or (self._purged and now - self._purged < PURGE_EVERY):
            return
        self._purged = now
        self.store.purge()

    def routes(self) -> list[Route]:
        services = ThreadServices(self.store, self.auth, self.streaming, self.purge_when_due)
        create, append = _turn_declared(self.limits.turn_bytes)
        return routes_of(
            list_threads,
            create,
            read_thread,
            rename_thread,
            delete_thread,
            append,
            services=services,
        )


@dataclass(frozen=True)
class ThreadServices:
    """What the handlers work with, one set per app: they take it from the call
    (`call.services`, routes_of)."""

    store: ThreadStore
    auth: Auth
    streaming: Callable[[str, str], bool]  # whether the site's model answers in a thread now
    purge: Callable[[], None]  # Threads.purge_when_due


def _threads(call: Call) -> ThreadServices:
    services: ThreadServices = call.services
    return services


SIGNED_IN = signed_in(SIGN_IN)  # each route's `who`: the app's signed-in person


async def _purge(services: ThreadServices) -> None:
    if services.store.limits.keep_days is not None:
        await run_in_threadpool(services.purge)


# The routes, each declared once at import (but the two a turn's limit bounds: _turn_declared);
# a request tries them in the order of Threads.routes.
@declare(
    "GET",
    "/api/threads",
    "The signed-in person's conversations, the most recently added to first, a page at "
    "a time (`before`: the `next` of the page before), with the limits the server keeps",
    query={
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        "before": {
            "type": "string",
            "maxLength": 100,
            "pattern": CURSOR.pattern,
        },
    },
    replies={200: Reply(LISTED, headers=NO_STORE)},
    refusals={401: "Nobody is signed in.", 422: "`before` is not a cursor it answered."},
    who=SIGNED_IN,
)
async def list_threads(call: Call) -> Response:
    services = _threads(call)
    await _purge(services)
    listed = await run_in_threadpool(
        services.store.listed,
        call.user.username,
        call.query.get("limit", 30),
        call.query.get("before", ""),
    )
    return JSONResponse(listed, headers={"cache-control": "no-store"})


async def create_thread(call: Call) -> Response:  # declared per app: _turn_declared
    services = _threads(call)
    await _purge(services)
    body = call.body
    made = await run_in_threadpool(
        lambda: services.store.create(
            call.user.username,
            tab=body["tab"],
            messages=body["messages"],
            items=body["items"],
            answering=body.get("answering", False),
            title=body.get("title", ""),
        )
    )
    return JSONResponse(made, 201, headers={"cache-control": "no-store"})


@declare(
    "GET",
    "/api/threads/{id}",
    "One of the person's conversations, whole: what the model saw (`messages`) and what "
    "the person saw (`items`)",
    path={"id": THREAD_ID},
    replies={200: Reply(THREAD, headers=NO_STORE)},
    refusals={401: "Nobody is signed in.", 404: NOT_THEIRS},
    who=SIGNED_IN,
)
async def read_thread(call: Call) -> Response:
    services = _threads(call)
    text = await run_in_threadpool(services.store.read, call.user.username, call.path["id"])
    # off the loop: with several processes, the database says who holds the reply
    streaming = await run_in_threadpool(services.streaming, call.user.username, call.path["id"])
    text = f'{text[:-1]}, "streaming": {"true" if streaming else "false"}}}'
    return Response(text, media_type="application/json", headers={"cache-control": "no-store"})


async def append_turn(call: Call) -> Response:  # declared per app: _turn_declared
    store, body = _threads(call).store, call.body
    appended = await run_in_threadpool(
        lambda: store.append(
            call.user.username,
            call.path["id"],
            version=body["version"],
            tab=body["tab"],
            messages=body["messages"],
            items=body["items"],
            answering=body.get("answering", False),
            start=body.get("start", False),
        )
    )
    return JSONResponse(appended)


@declare(
    "PATCH",
    "/api/threads/{id}",
    "Rename one of the person's conversations",
    path={"id": THREAD_ID},
    body=TITLE,
    body_limit=4096,
    replies={200: Reply(SUMMARY)},
    refusals={401: "Nobody is signed in.", 404: NOT_THEIRS},
    who=SIGNED_IN,
)
async def rename_thread(call: Call) -> Any:
    title = call.body["title"].strip()
    return await run_in_threadpool(
        _threads(call).store.rename, call.user.username, call.path["id"], title
    )


@declare(
    "DELETE",
    "/api/threads/{id}",
    "Delete one of the person's conversations, with everything in it",
    path={"id": THREAD_ID},
    replies={
        200: Reply(
            {
                "type": "object",
                "required": ["deleted"],
                "properties": {"deleted": {"type": "string"}},
            }
        )
    },
    refusals={401: "Nobody is signed in.", 404: NOT_THEIRS},
    who=SIGNED_IN,
)
async def delete_thread(call: Call) -> Any:
    await run_in_threadpool(_threads(call).store.delete, call.user.username, call.path["id"])
    return {"deleted": call.path["id"]}


def _turn_declared(turn_bytes: int) -> tuple[Endpoint, Endpoint]:
    """create_thread and append_turn, declared with the app's limit of a turn: their body limit
    and 413's sentence come from the ThreadLimits create_app is given (`threads`), one per app,
    so these two declarations are made per app; their handlers are the module's."""
    too_large = (
        f"One turn may add at most {megabytes(turn_bytes)} to a conversation; "
        "start a new conversation, or ask for less at once."
    )
    create = declare(
        "POST",
        "/api/threads",
        "Start a conversation with its first turn (the page's first message); its title is "
        "the first words of that message unless one is given",
        body=CREATE,
        body_limit=turn_bytes,
        too_large=too_large,
        replies={201: Reply(SUMMARY, headers=NO_STORE), 409: Reply(CONFLICT)},
        refusals={
            401: "Nobody is signed in.",
            413: "The turn is larger than one turn may be.",
        },
        who=SIGNED_IN,
    )(create_thread)
    append = declare(
        "POST",
        "/api/threads/{id}/turns",
        "Add what the conversation gained since `version` (a turn, or the part of one that "
        "came); `start` for a new turn, refused while another tab's answer is coming",
        path={"id": THREAD_ID},
        body=APPEND,
        body_limit=turn_bytes,
        too_large=too_large,
        description="409: the conversation changed since `version` (`current` says what it "
        "is now), another tab is answering in it (`answering`), or it is full (`limit`).",
        replies={200: Reply(APPENDED), 409: Reply(CONFLICT)},
        refusals={
            401: "Nobody is signed in.",
            404: NOT_THEIRS,
            413: "The turn is larger than one turn may be.",
        },
        who=SIGNED_IN,
    )(append_turn)
    return create, append
