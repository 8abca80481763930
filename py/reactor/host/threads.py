"""Where the page's chat keeps its conversations: on the server for a signed-in person
(`/api/threads`, reactor.server.threads), in this browser for anyone else (the page's storage:
nothing of it goes to the server).

A conversation is a thread: what the model saw (`messages`, reactor.host.model's shape) and
what the person saw (`items`, reactor.host.transcript). The ThreadKeeper appends to it as the
conversation goes: the person's message before the model is asked (so a second tab sending at
the same moment is refused, not interleaved), each model turn and tool result as it comes, and
the end of the turn. Each append names the version it follows; `answering` says a turn is under
way, and which tab runs it (`tab`: the page's name for its tab, kept across reloads), so a page
reloaded mid-answer knows the turn was its own.

Both stores take and answer the same shapes (the server's THREAD and SUMMARY), and refuse in the
same words; `LocalThreads` keeps them in the page's storage under STORAGE_INDEX (the summaries,
newest first) and STORAGE_PREFIX + id (a thread), which the widget reads at load too.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..errors import HttpError
from .errors import HostError
from .transcript import Transcript

UNTITLED = "New conversation"
TITLE_WORDS, TITLE_LENGTH = 8, 60
STORAGE_INDEX = "reactor.threads"
STORAGE_PREFIX = "reactor.thread."
LOCAL_THREADS, LOCAL_BYTES = 30, 2_000_000  # what one browser keeps: its storage holds ~5 MB
ANSWERING_SECONDS = 120.0  # how long a turn no tab finishes holds its thread


class ThreadRefused(HostError):
    """The store refused an append or a read: `status` (404, 409…), the person's sentence, and
    `stale` when the thread changed in another tab (the page then draws it as it is)."""

    def __init__(self, sentence: str, *, status: int = 0, stale: bool = False) -> None:
        super().__init__(sentence)
        self.status, self.stale = status, stale


def first_words(messages: list[dict[str, Any]]) -> str:
    """A thread's title until the person names it: the first words of its first message."""
    for message in messages:
        text = message.get("content") if message.get("role") == "user" else None
        if isinstance(text, str) and text.split():
            words = text.split()
            title = " ".join(words[:TITLE_WORDS])
            if len(title) > TITLE_LENGTH:
                title = title[: TITLE_LENGTH - 1].rstrip() + "…"
            elif len(words) > TITLE_WORDS:
                title += "…"
            return title
    return UNTITLED


class ThreadStore(Protocol):
    """What the keeper needs of a store; both answer the server's shapes."""

    where: str  # "server" or "local"

    async def create(self, body: dict[str, Any]) -> dict[str, Any]: ...

    async def append(self, thread_id: str, body: dict[str, Any]) -> dict[str, Any]: ...

    async def read(self, thread_id: str) -> dict[str, Any]: ...

    async def listed(self, before: str = "") -> dict[str, Any]: ...

    async def rename(self, thread_id: str, title: str) -> dict[str, Any]: ...

    async def delete(self, thread_id: str) -> None: ...


Fetch = Callable[..., Awaitable[Any]]  # fetch(method, url, body=None) -> JSON, HttpError if refused


class ServerThreads:
    """A signed-in person's threads, at the reactor server's /api/threads."""

    where = "server"

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(await self._ask("POST", "/api/threads", body))

    async def append(self, thread_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(await self._ask("POST", f"/api/threads/{thread_id}/turns", body))

    async def read(self, thread_id: str) -> dict[str, Any]:
        return dict(await self._ask("GET", f"/api/threads/{thread_id}"))

    async def listed(self, before: str = "") -> dict[str, Any]:
        query = f"?before={before}" if before else ""
        return dict(await self._ask("GET", f"/api/threads{query}"))

    async def rename(self, thread_id: str, title: str) -> dict[str, Any]:
        return dict(await self._ask("PATCH", f"/api/threads/{thread_id}", {"title": title}))

    async def delete(self, thread_id: str) -> None:
        await self._ask("DELETE", f"/api/threads/{thread_id}")

    async def _ask(self, method: str, url: str, body: Any = None) -> Any:
        try:
            return await self._fetch(method, url, body)
        except HttpError as error:
            stale = error.status == 409 and "current" in error.body
            raise ThreadRefused(error.detail, status=error.status, stale=stale) from None
        except (OSError, ConnectionError) as error:
            raise ThreadRefused(
                "This site could not be reached to keep the conversation; check your "
                f"connection ({error}).",
                status=0,
            ) from None


class Storage(Protocol):
    """The page's own storage (localStorage of its origin), as text by key."""

    async def get(self, key: str) -> str | None: ...

    async def set(self, key: str, value: str) -> None: ...

    async def remove(self, key: str) -> None: ...


class MemoryStorage:
    """Storage in a dict: the stand-in of CPython tests."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    async def get(self, key: str) -> str | None:
        return self.values.get(key)

    async def set(self, key: str, value: str) -> None:
        self.values[key] = value

    async def remove(self, key: str) -> None:
        self.values.pop(key, None)


class LocalThreads:
    """A signed-out person's threads, in this browser's storage, with the server's rules."""

    where = "local"

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        index = await self._index()
        if len(index) >= LOCAL_THREADS:
            raise ThreadRefused(
                f"This browser keeps {LOCAL_THREADS} conversations at most: delete old ones to "
                "start a new one (or sign in to keep more on this site).",
                status=409,
            )
        now = time.time()
        messages, items = list(body["messages"]), list(body["items"])
        thread = {
            "id": _random_name(16),
            "title": str(body.get("title") or "").strip() or first_words(messages),
            "created": now,
            "updated": now,
            "version": 1,
            "size": 0,
            "messages": messages,
            "items": items,
            "answering": _answering(body, now),
        }
        thread["size"] = _size(thread)
        self._fits(thread)
        await self._write(thread, index)
        return _summary(thread)

    async def append(self, thread_id: str, body: dict[str, Any]) -> dict[str, Any]:
        thread = await self.read(thread_id)
        if thread["version"] != body["version"]:
            raise ThreadRefused(
                "This conversation changed in another tab or window; it is shown here as it is "
                "now. Send your message again.",
                status=409,
                stale=True,
            )
        now, answering = time.time(), thread.get("answering")
        if (
            body.get("start")
            and answering
            and answering["tab"] != body["tab"]
            and answering["since"] >= now - ANSWERING_SECONDS
        ):
            raise ThreadRefused(
                "The assistant is still answering in another tab or window; wait for it to "
                "finish, or stop it there, then send your message again.",
                status=409,
            )
        thread["messages"] += body["messages"]
        thread["items"] += body["items"]
        thread["version"] += 1
        thread["updated"] = now
        thread["answering"] = _answering(body, now)
        thread["size"] = _size(thread)
        self._fits(thread)
        await self._write(thread, await self._index())
        return {"version": thread["version"], "updated": now}

    async def read(self, thread_id: str) -> dict[str, Any]:
        text = await self.storage.get(STORAGE_PREFIX + thread_id)
        thread = _loaded(text)
        if thread is None:
            raise ThreadRefused(
                f"There is no conversation {thread_id[:40]!r} in this browser; it may have been "
                "deleted.",
                status=404,
            )
        answering = thread.get("answering")
        if answering:
            answering["stale"] = answering["since"] < time.time() - ANSWERING_SECONDS
        return thread

    async def listed(self, before: str = "") -> dict[str, Any]:
        index = await self._index()
        return {
            "threads": index,
            "next": None,
            "count": len(index),
            "limits": {
                "threads": LOCAL_THREADS,
                "threadBytes": LOCAL_BYTES,
                "turnBytes": LOCAL_BYTES,
                "keepDays": None,
            },
        }

    async def rename(self, thread_id: str, title: str) -> dict[str, Any]:
        thread = await self.read(thread_id)
        thread["title"] = title
        await self._write(thread, await self._index(), touched=False)
        return _summary(thread)

    async def delete(self, thread_id: str) -> None:
        await self.read(thread_id)
        await self.storage.remove(STORAGE_PREFIX + thread_id)
        index = [t for t in await self._index() if t["id"] != thread_id]
        await self.storage.set(STORAGE_INDEX, json.dumps(index))

    def _fits(self, thread: dict[str, Any]) -> None:
        if thread["size"] > LOCAL_BYTES:
            raise ThreadRefused(
                f"This conversation has reached the {LOCAL_BYTES / 1_000_000:g} MB this browser "
                "keeps of one, so nothing more can be added to it: start a new conversation "
                "(this one stays as it is).",
                status=409,
            )

    async def _index(self) -> list[dict[str, Any]]:
        try:
            index = json.loads(await self.storage.get(STORAGE_INDEX) or "[]")
        except ValueError:
            return []
        return index if isinstance(index, list) else []

    async def _write(
        self, thread: dict[str, Any], index: list[dict[str, Any]], *, touched: bool = True
    ) -> None:
        await self.storage.set(STORAGE_PREFIX + thread["id"], json.dumps(thread))
        others = [t for t in index if t.get("id") != thread["id"]]
        if touched:
            index = [_summary(thread), *others]
        else:
            index = [_summary(thread) if t.get("id") == thread["id"] else t for t in index]
        await self.storage.set(STORAGE_INDEX, json.dumps(index))


def _random_name(size: int) -> str:
    """Unguessable: `size` random bytes, in hex (not `secrets`: the page would fetch the stdlib
    zip for it)."""
    return os.urandom(size).hex()


def _loaded(text: str | None) -> dict[str, Any] | None:
    try:
        thread = json.loads(text) if text else None
    except ValueError:
        return None
    return thread if isinstance(thread, dict) and "id" in thread else None


def _answering(body: dict[str, Any], now: float) -> dict[str, Any] | None:
    return {"tab": body["tab"], "since": now} if body.get("answering") else None


def _size(thread: dict[str, Any]) -> int:
    return len(json.dumps([thread["messages"], thread["items"]]).encode("utf-8"))


def _summary(thread: dict[str, Any]) -> dict[str, Any]:
    answering = thread.get("answering") or {}
    return {
        "id": thread["id"],
        "title": thread["title"],
        "created": thread["created"],
        "updated": thread["updated"],
        "version": thread["version"],
        "size": thread["size"],
        "messages": len(thread["messages"]),
        "answering": answering.get("since", 0) >= time.time() - ANSWERING_SECONDS,
    }


class ThreadKeeper:
    """The page's current thread: where it is kept, its id and version, and what of the
    conversation is kept already. `keep(stage, history)` is the loop's hook (reactor.host.loop)."""

    def __init__(self, tab: str = "") -> None:
        self.tab = tab or _random_name(8)
        self.store: ThreadStore | None = None
        self.thread: dict[str, Any] | None = None  # {id, title, version}: None until kept
        self.transcript = Transcript()
        self.saved = 0  # how many of the history's messages are kept
        self.on_created: Callable[[dict[str, Any]], object] = lambda thread: None

    def use(self, store: ThreadStore | None) -> None:
        """Keep from now on in `store` (None: nowhere); the current thread starts anew."""
        self.store = store
        self.start_new()

    def start_new(self) -> None:
        self.thread, self.transcript, self.saved = None, Transcript(), 0

    def opened(self, thread: dict[str, Any]) -> list[dict[str, Any]]:
        """`thread` (the store's whole thread) is the current one: its messages, the history."""
        self.thread = {k: thread[k] for k in ("id", "title", "version")}
        self.transcript = Transcript(thread.get("items") or [])
        self.saved = len(thread.get("messages") or [])
        return list(thread.get("messages") or [])

    async def keep(self, stage: str, history: list[dict[str, Any]]) -> None:
        """Append what the conversation gained: at "start" the person's message (refused while
        another tab answers, or when this page missed a change), "end" when the turn ends; the
        other stages as the turn goes. Raises ThreadRefused with the person's sentence."""
        if self.store is None:
            return
        messages = history[self.saved :]
        items = self.transcript.unsaved()
        if stage == "start":
            items = [*items, {"type": "message", "role": "user", "text": history[-1]["content"]}]
        answering = stage != "end"
        if not messages and not items and stage not in ("start", "end"):
            return
        body = {"messages": messages, "items": items, "answering": answering, "tab": self.tab}
        if self.thread is None:
            if not messages:
                return  # nothing of a conversation yet
            made = await self.store.create(body)
            self.thread = {k: made[k] for k in ("id", "title", "version")}
            self.on_created(self.thread)
        else:
            version = self.thread["version"]
            try:
                answer = await self.store.append(
                    self.thread["id"], {**body, "version": version, "start": stage == "start"}
                )
            except ThreadRefused as refused:
                if stage != "end" or refused.stale or refused.status != 409:
                    raise
                # Full: the turn is closed all the same, so no tab waits for it; what it added
                # since stays on this page only.
                empty = {**body, "messages": [], "items": [], "version": version, "start": False}
                answer = await self.store.append(self.thread["id"], empty)
                self.thread["version"] = answer["version"]
                raise
            self.thread["version"] = answer["version"]
        if stage == "start":
            self.transcript.add(items[-1])
        self.transcript.saved()
        self.saved = len(history)
