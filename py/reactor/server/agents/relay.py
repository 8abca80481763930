"""PageRelay: the person's connected pages, and the calls on their way to them and back.

A page holds its WebSocket on one server process; a call may start on another (the agent's
request reached it) and the page's answer may reach a third. With one process (SQLite)
everything is in this process's memory. With several on one PostgreSQL, a `PageBus`
(server/agents/bus.py) keeps the directory of pages in the database and carries the messages
between processes by LISTEN/NOTIFY: a call to the process holding the page's stream, the answer
(or "the page went") to the process waiting for it, whose name the call's id begins with.

A process that dies takes its pages' links and its waiting calls with it: the bus says which
processes went (`processes_gone`), and the relay ends the calls waiting on their pages and
withdraws, on its own pages, the calls nobody waits for any more. A process that stops (SIGTERM)
says so first (`stop`).

A withdrawal takes a moment to reach the page, and the person may click Allow meanwhile: before
a write runs, the page claims its call (`claim`). The process whose call it is answers yes only
while the call's waiter is alive, and marks it claimed in the same step of its loop; from then on
nothing withdraws the call from the page, and an agent that stops waiting is told it runs. A
claim for a call whose process is gone (or that does not answer within CLAIM_SECONDS) is refused,
and the page runs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from ...envelope import tool_failure
from ...errors import DatabaseError, ReactorError

log = logging.getLogger("reactor")
STOPPING = (
    "The reactor server this agent reached is stopping: {tool} was withdrawn from the page "
    "before it answered. Call it again (another server process takes the call)."
)
PROGRESS_SECONDS = 5.0
ANSWER_LIMIT = 120.0
MAX_PAGES = 20  # connected pages per person
CLAIM_SECONDS = 3.0  # a claim that crossed to another process and was not answered is refused


PAGE_CLOSED = "The page closed before {tool} answered; whether it ran is unknown."
CLAIMED_TIMEOUT = (
    "The person allowed {tool} in the page and it is running there, but its result did not come "
    "within {limit:g} s. Read what the page shows before you call it again."
)
CLAIMED_STOPPING = (
    "The person allowed {tool} in the page and it is running there, but the reactor server this "
    "agent reached is stopping before its result came. Read what the page shows before you call "
    "it again."
)
LINK_LOST = (
    "The page's link was lost (the server process holding it stopped) before {tool} answered, "
    "and the page stopped the call; whether it had begun to run is unknown. Call reactor_pages, "
    "then try again."
)


class PageGone(ReactorError):
    """The page went before it answered; `sentence` says so to the agent ({tool} in it)."""

    def __init__(self, sentence: str = PAGE_CLOSED) -> None:
        super().__init__(sentence)
        self.sentence = sentence


@dataclass(eq=False)
class PageLink:
    """One connected page of one person. `outbox` is its WebSocket's, on the process that
    holds the socket (`process`); elsewhere the page is known by its directory row only."""

    id: str
    username: str
    title: str
    url: str
    process: str
    active_at: float = field(default_factory=time.time)
    tools: list[dict[str, Any]] = field(default_factory=list)
    route: str = ""  # what the page shows, as its address's fragment says (#/decks/onboarding/4)
    outbox: asyncio.Queue[dict[str, Any] | None] | None = None
    loop: asyncio.AbstractEventLoop | None = None
    sent: set[str] = field(default_factory=set)  # the calls sent down its stream, not yet answered

    def describe(self) -> dict[str, Any]:
        """The page as an agent chooses among them (reactor_pages)."""
        used = datetime.fromtimestamp(self.active_at, UTC)
        return {
            "page": self.id,
            "title": self.title,
            "route": self.route,
            "url": self.url,
            "lastUsed": used.isoformat(timespec="seconds").replace("+00:00", "Z"),
            "tools": len(self.tools),
        }

    def end(self) -> None:
        """End the page's WebSocket (from any thread): it is disconnected, and connects again."""
        if self.loop is not None and self.outbox is not None:
            self.loop.call_soon_threadsafe(self.outbox.put_nowait, None)


class PageBus(Protocol):
    """What the relay needs to span processes (server/agents/bus.py implements it on PostgreSQL)."""

    def pages_of(self, username: str) -> list[PageLink]: ...
    def first_page(self, username: str) -> PageLink | None: ...
    # Each write tells every process (`changed`: the person's tool list may answer otherwise).
    def save(self, page: PageLink, *, changed: bool = True) -> None: ...
    def remove(self, page: PageLink) -> None: ...
    def send(self, process: str, message: dict[str, Any]) -> None: ...
    def alive(self, process: str) -> bool: ...


class PageRelay:
    """The connected pages, by person, and the calls to them: `call` sends one and waits for its
    answer (with progress, a limit, and the page's going); `answer` takes one from the page."""

    def __init__(self, bus: PageBus | None = None) -> None:
        self.process = secrets.token_hex(4)
        self.bus = bus
        self.pages: dict[str, PageLink] = {}  # the pages whose streams this process holds
        # the calls this process waits on, and the page each one went to
        self.waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.waiting_on: dict[str, PageLink] = {}
        self.claimed: set[str] = set()  # those of them a page claimed: they run, whatever comes
        # the claims this process's pages made of other processes' calls: call -> (page, its end)
        self.claims: dict[str, tuple[str, asyncio.TimerHandle]] = {}
        self.stopping = ""  # why this process is stopping: no call is sent any more
        self.answer_limit = ANSWER_LIMIT
        self.progress_seconds = PROGRESS_SECONDS
        # The MCP connections of each person on this process, told when their tool list changes.
        self.listeners: dict[str, weakref.WeakSet[Any]] = {}
        self.notices: set[asyncio.Future[None]] = set()
        # Other kinds of message that cross by the same bus, by type (server/agents/sessions.py).
        self.hearers: dict[str, Callable[[dict[str, Any]], None]] = {}
        # ...and what else depends on other processes (server/gateway/shared.py): which of them
        # to watch, and who is told when some go.
        self.dependents: list[Callable[[], set[str]]] = []
        self.on_gone: list[Callable[[set[str]], None]] = []

    # The directory of pages

    def connect(self, username: str, title: str, url: str, route: str = "") -> PageLink | None:
        if len(self.pages_of(username)) >= MAX_PAGES:
            return None
        page = PageLink(secrets.token_hex(8), username, title[:200], url[:500], self.process)
        page.route = route[:500]
        page.outbox, page.loop = asyncio.Queue(), asyncio.get_running_loop()
        if self.bus is not None:
            # first: a page the directory does not have is nobody's. It is the person's first
            # page at once, on every process; their tool list changes when it sends its own.
            self.bus.save(page, changed=False)
        self.pages[page.id] = page
        return page

    def disconnect(self, page: PageLink) -> None:
        """The page's link ended: its calls fail at once, it leaves the directory. With the
        database away the calls waiting here still fail; the rest is settled when the bus is
        back (server/agents/bus.py writes this process's pages again)."""
        if self.pages.pop(page.id, None) is None:
            return
        for call in page.sent:
            _tolerant(self.gone, call)
        if self.bus is not None:
            _tolerant(self.bus.remove, page)  # every process's agents are told with it
        self._notify(page.username)

    def pages_of(self, username: str) -> list[PageLink]:
        """The person's connected pages, on any process, the most recently active first."""
        pages = (
            self.bus.pages_of(username)
            if self.bus is not None
            else [p for p in self.pages.values() if p.username == username]
        )
        return sorted(pages, key=lambda p: -p.active_at)

    def first_page(self, username: str) -> PageLink | None:
        """The page a call goes to: the person's most recently active (its tools unread when
        another process holds it)."""
        if self.bus is not None:
            return self.bus.first_page(username)
        pages = self.pages_of(username)
        return pages[0] if pages else None

    def page_of(self, username: str, page_id: str) -> PageLink | None:
        return next((p for p in self.pages_of(username) if p.id == page_id), None)

    def set_tools(self, page: PageLink, tools: list[dict[str, Any]]) -> None:
        page.tools = tools
        self._saved(page)

    def locate(self, page: PageLink, title: str, route: str) -> None:
        """What the page shows now (its title, its address's fragment), as reactor_pages says."""
        page.title, page.route = title[:200], route[:500]
        self._saved(page, changed=False)

    def touch(self, page: PageLink) -> None:
        """The person is using this page: it is the one tools go to. Their agents hear of it
        only when that changes which page it is (tools/list answers otherwise then)."""
        first = self.first_page(page.username)
        was_first = first is not None and first.id == page.id
        page.active_at = time.time()
        self._saved(page, changed=not was_first)

    def _saved(self, page: PageLink, *, changed: bool = True) -> None:
        local = self.pages.get(page.id)
        if local is not None and local is not page:
            local.tools, local.active_at = page.tools, page.active_at
            local.title, local.route = page.title, page.route
        if self.bus is not None:
            self.bus.save(page, changed=changed)  # every process's agents are told with it
        if changed:
            self._notify(page.username)

    # Calls

    async def call(
        self,
        page: PageLink,
        tool: str,
        arguments: dict[str, Any],
        progress: Callable[[float, str], Awaitable[None]],
        agent: str = "",
    ) -> dict[str, Any]:
        """The page's envelope for one call, or ours for a page that went or a person who did not
        answer. `agent` is the token's name, which the page shows its person."""
        if self.stopping:
            return failure("unavailable", self.stopping.format(tool=tool))
        call_id = f"{self.process}.{secrets.token_hex(8)}"
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self.waiting[call_id] = future
        self.waiting_on[call_id] = page
        started = time.monotonic()
        # While it waits: progress every progress_seconds, and the end at answer_limit, by a
        # timer: the call awaits its answer alone (a timeout around each wait cost a task).
        reporting: set[asyncio.Future[None]] = set()
        timer: asyncio.TimerHandle

        def tick() -> None:
            nonlocal timer
            if future.done():
                return
            waited = time.monotonic() - started
            if waited >= self.answer_limit and call_id in self.claimed:
                sentence = CLAIMED_TIMEOUT.format(tool=tool, limit=self.answer_limit)
                future.set_result(failure("timeout", sentence))
                return
            if waited >= self.answer_limit:
                self._to_page(page, {"type": "cancel", "call": call_id})
                future.set_result(
                    failure(
                        "timeout",
                        f"The person did not answer in the page within {self.answer_limit:g} s, "
                        f"so {tool} did not run; ask them in the chat before you try again.",
                    )
                )
                return
            sending = asyncio.ensure_future(
                progress(
                    waited, f"Waiting for the page to answer {tool} (the person may be deciding)."
                )
            )
            reporting.add(sending)
            sending.add_done_callback(_reported(reporting))
            timer = loop.call_later(min(self.progress_seconds, self.answer_limit - waited), tick)

        timer = loop.call_later(min(self.progress_seconds, self.answer_limit), tick)
        try:
            self._to_page(
                page,
                {
                    "type": "call",
                    "call": call_id,
                    "tool": tool,
                    "arguments": arguments,
                    "agent": agent,
                },
            )
            return await future
        except PageGone as gone:
            return failure("unavailable", gone.sentence.format(tool=tool))
        except asyncio.CancelledError:
            if call_id not in self.claimed:  # a claimed call runs: the person allowed it
                self._to_page(page, {"type": "cancel", "call": call_id})
            raise
        finally:
            timer.cancel()
            for sending in reporting:
                sending.cancel()
            self.waiting.pop(call_id, None)
            self.waiting_on.pop(call_id, None)
            self.claimed.discard(call_id)

    def answer(self, page: PageLink, call_id: str, envelope: dict[str, Any]) -> bool:
        """The page's answer to a call, sent to the process that waits for it. False when the
        call was not sent to this page (another page's, already answered, given up, or not a
        call at all): an answer counts only from the page the call went to."""
        local = self.pages.get(page.id)
        if local is None or call_id not in local.sent:
            return False
        local.sent.discard(call_id)
        process = call_id.partition(".")[0]
        if process != self.process:
            if self.bus is None or not process:
                return False
            self.bus.send(process, {"type": "answer", "call": call_id, "envelope": envelope})
            return True
        return self.settle(call_id, envelope)

    def settle(
        self, call_id: str, envelope: dict[str, Any] | None, gone: str = PAGE_CLOSED
    ) -> bool:
        """Answer a call this process waits for; None: the page went (`gone` says how, to the
        agent)."""
        future = self.waiting.get(call_id)
        if future is None or future.done():
            return False
        if envelope is None:
            future.set_exception(PageGone(gone))
        else:
            future.set_result(envelope)
        return True

    def claim(self, page: PageLink, call_id: str) -> None:
        """The page's person allowed a call: the page may run it only if the process whose call
        it is still waits for it. The answer (`claimed` {call, ok}) goes down the page's link."""
        local = self.pages.get(page.id)
        if local is None:
            return
        process = call_id.partition(".")[0]
        if call_id in self.claims:
            return  # asked already: that answer comes
        if call_id not in local.sent:  # not sent to this page, answered, or withdrawn already
            self._claimed(local.id, call_id, False)
        elif process == self.process:
            self._claimed(local.id, call_id, self.take(call_id))
        elif self.bus is None:
            self._claimed(local.id, call_id, False)
        else:
            loop = asyncio.get_running_loop()
            late = loop.call_later(CLAIM_SECONDS, self._claimed, local.id, call_id, False)
            self.claims[call_id] = (local.id, late)
            try:
                if not self.bus.alive(process):  # its waiter went with it
                    self._claimed(local.id, call_id, False)
                    return
                self.bus.send(process, {"type": "claim", "call": call_id, "from": self.process})
            except DatabaseError as error:  # no one can say the call still waits: nothing runs
                log.warning("A page's claim could not cross to its process: %s", error)
                self._claimed(local.id, call_id, False)

    def take(self, call_id: str) -> bool:
        """Claim a call this process waits for: yes while its waiter is alive (not answered, not
        given up, not past its limit), and from then on it is not withdrawn. One step of the
        loop: no withdrawal comes between the look and the mark."""
        future = self.waiting.get(call_id)
        if future is None or future.done():
            return False
        self.claimed.add(call_id)
        return True

    def _claimed(self, page_id: str, call_id: str, ok: bool) -> None:
        """The answer to a page's claim, down its link (a claim answered once: a late one drops)."""
        pending = self.claims.pop(call_id, None)
        if pending is not None:
            pending[1].cancel()
        self.deliver(page_id, {"type": "claimed", "call": call_id, "ok": ok})

    def gone(self, call_id: str) -> None:
        process = call_id.partition(".")[0]
        if process == self.process:
            self.settle(call_id, None)
        elif self.bus is not None:
            self.bus.send(process, {"type": "gone", "call": call_id})

    def _to_page(self, page: PageLink, message: dict[str, Any]) -> None:
        if page.process == self.process or self.bus is None:
            self.deliver(page.id, message)
        else:
            self.bus.send(page.process, {**message, "page": page.id})

    def deliver(self, page_id: str, message: dict[str, Any]) -> None:
        """Down the stream of a page of this process; a call to a page that went fails at once."""
        page = self.pages.get(page_id)
        if page is None or page.outbox is None:
            if message.get("type") == "call":
                self.gone(message["call"])
            return
        if message.get("type") == "call":
            page.sent.add(message["call"])
        page.outbox.put_nowait({k: v for k, v in message.items() if k != "page"})

    def heard(self, message: dict[str, Any]) -> None:
        """A message from another process (server/agents/bus.py), on this process's loop."""
        kind = message.get("type")
        if kind in ("call", "cancel"):
            self.deliver(str(message.get("page")), message)
        elif kind == "answer" and isinstance(message.get("envelope"), dict):
            self.settle(str(message.get("call")), message["envelope"])
        elif kind == "gone":
            self.settle(str(message.get("call")), None)
        elif kind == "claim" and self.bus is not None:
            call_id = str(message.get("call"))
            answer = {"type": "claimed", "call": call_id, "ok": self.take(call_id)}
            _tolerant(self.bus.send, str(message.get("from")), answer)
        elif kind == "claimed":
            call_id = str(message.get("call"))
            if call_id in self.claims:
                self._claimed(self.claims[call_id][0], call_id, message.get("ok") is True)
        elif kind == "changed":
            self._notify(str(message.get("username")))
        elif isinstance(kind, str) and kind in self.hearers:
            self.hearers[kind](message)

    # Processes that go

    def depended_on(self) -> set[str]:
        """The other processes whose death would end calls of this one: those waiting on answers
        from its pages, those holding the pages it waits on."""
        waiting = {c.partition(".")[0] for page in self.pages.values() for c in page.sent}
        holding = {page.process for page in self.waiting_on.values()}
        others = {process for dependent in self.dependents for process in dependent()}
        return (waiting | holding | others) - {self.process}

    def processes_gone(self, processes: set[str]) -> None:
        """Other processes died (the bus saw their connections end): the calls waiting here on
        their pages end, and this process's pages withdraw the calls they were waiting on."""
        for call_id, page in list(self.waiting_on.items()):
            if page.process in processes:
                self.settle(call_id, None, LINK_LOST)
        for call_id, (page_id, _) in list(self.claims.items()):
            if call_id.partition(".")[0] in processes:
                self._claimed(page_id, call_id, False)
        for page in self.pages.values():
            for call_id in [c for c in page.sent if c.partition(".")[0] in processes]:
                page.sent.discard(call_id)
                self.deliver(page.id, {"type": "cancel", "call": call_id})
        for username in {p.username for p in self.pages.values()} | set(self.listeners):
            self._notify(username)
        for told in self.on_gone:
            told(processes)

    def stop(self, why: str = STOPPING) -> None:
        """This process is stopping (SIGTERM): the calls it waits on end with `why` (a sentence for
        the agent, {tool} in it) and are withdrawn from their pages; its own pages are told to link
        again (to another process, behind a balancer); no call is sent any more."""
        self.stopping = why
        for call_id, page in list(self.waiting_on.items()):
            if call_id in self.claimed:  # it runs in the page: the agent is told so
                self.settle(call_id, None, CLAIMED_STOPPING)
                continue
            self.settle(call_id, None, why)
            _tolerant(self._to_page, page, {"type": "cancel", "call": call_id})
        for page in list(self.pages.values()):
            for call_id in page.sent:
                _tolerant(self.gone, call_id)
            page.sent.clear()
            page.end()

    # Tool list changes

    def _notify(self, username: str) -> None:
        """Tell the person's MCP connections on this process that tools/list may answer otherwise
        now (the bus tells the other processes', with the write that changed it)."""
        for connection in list(self.listeners.get(username, ())):
            task = asyncio.ensure_future(_quietly(connection.send_tool_list_changed()))
            self.notices.add(task)  # held until done: the loop keeps only weak references to tasks
            task.add_done_callback(self.notices.discard)


def _reported(reporting: set[asyncio.Future[None]]) -> Callable[[asyncio.Future[None]], None]:
    """A progress notice's end: forgotten, and a failure to send it (the agent went) dropped."""

    def done(sending: asyncio.Future[None]) -> None:
        reporting.discard(sending)
        if not sending.cancelled():
            sending.exception()

    return done


def _tolerant(step: Callable[..., None], *args: Any) -> None:
    """One step of a page's leaving or of a stop, which a database fault must not stop short."""
    try:
        step(*args)
    except DatabaseError as error:
        log.warning("The page relay could not reach the database: %s", error)


async def _quietly(notice: Awaitable[None]) -> None:
    with contextlib.suppress(Exception):
        await notice


def failure(code: str, message: str) -> dict[str, Any]:
    return tool_failure(code, message)
