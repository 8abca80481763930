"""The page's conversations, as the chat widget asks for them: the one drawn at load, the list,
switching, renaming, deleting, exporting, and what changes when the person signs in or out.

Signed in, they are the person's threads on the server; signed out, this browser's (nothing of
them goes to the server). The widget draws a thread at load before Python is ready (it reads the
same stores) and hands it over with `restore`; from then on this decides. A thread is drawn
again, never run again: a turn a reload cut is asked for again only where it waited for the
person (an approval), re-attached where the server kept the model's reply (the site's model),
and otherwise shown as interrupted, with Continue.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .approval import needs_approval
from .errors import HostError
from .loop import HostEvent
from .session import ChatSession
from .threads import ANSWERING_SECONDS, ThreadRefused, ThreadStore
from .transcript import markdown

# What a restored thread's cut turn needs: nothing, the person's answer asked again, the model's
# reply re-attached, Continue, or nothing here (another tab is answering).
RESUMES = ("approval", "stream", "interrupted", "elsewhere")


class Conversations:
    """The chat's threads: `server` for a signed-in person, `local` for anyone else."""

    def __init__(
        self,
        session: ChatSession,
        *,
        server: ThreadStore,
        local: ThreadStore,
    ) -> None:
        self.session, self.keeper = session, session.keeper
        self.server, self.local = server, local
        self.signed_in: bool | None = None  # None until the widget says
        self.cut: str | None = None  # the restored thread's cut turn (RESUMES), until resumed
        self.keeper.on_created = self._created

    # -- the widget's requests -------------------------------------------------------------

    async def handle(self, message: dict[str, Any]) -> Any:
        """One `chat.thread` request: `op` names it."""
        op = message.get("op")
        if op == "restore":
            return await self.restore(
                message.get("thread"), str(message.get("where")), str(message.get("tab") or "")
            )
        if op == "list":
            return await self.store.listed(str(message.get("before") or ""))
        if op == "open":
            return await self.open(str(message["thread"]))
        if op == "new":
            return self.new()
        if op == "rename":
            return await self.rename(str(message["thread"]), str(message["title"]))
        if op == "delete":
            return await self.delete(str(message["thread"]))
        if op == "export":
            return await self.export(message.get("thread"), str(message.get("format")))
        if op == "refresh":
            return await self.refresh()
        if op == "signedIn":
            return await self.sign(bool(message.get("signedIn")))
        if op == "keep":
            return await self.keep_here(str(message["thread"]))
        raise HostError(f"There is no conversation operation {op!r}.")

    @property
    def store(self) -> ThreadStore:
        return self.server if self.signed_in else self.local

    async def restore(self, thread: dict[str, Any] | None, where: str, tab: str) -> dict[str, Any]:
        """The thread the widget drew at load becomes the chat's: its history, its cut turn."""
        if tab:
            self.keeper.tab = tab
        self.signed_in = where == "server"
        self.keeper.use(self.store)
        offer = await self._offer(None) if self.signed_in else None
        if thread is None:
            return {"resume": None, "offer": offer}
        self._adopt(thread)
        return {"resume": self.cut, "offer": offer}

    async def resume(self) -> dict[str, Any]:
        """Go on with the restored thread's cut turn (the widget asks at once for an approval or
        a re-attached reply, and when the person presses Continue)."""
        cut, self.cut = self.cut, None
        if cut not in RESUMES or cut == "elsewhere":
            raise HostError("There is no interrupted answer to continue here.")
        if cut == "stream":
            return await self.session.reattach()
        return await self.session.resume(ask_again=cut == "approval")

    async def send(self, text: str) -> dict[str, Any]:
        """The person's message; a thread that changed in another tab is drawn as it is now,
        and the send refused with the sentence (the message is not added)."""
        self.cut = None
        try:
            return await self.session.send(text)
        except ThreadRefused as refused:
            if refused.stale or refused.status == 409:
                await self.refresh()
            raise

    async def open(self, thread_id: str) -> dict[str, Any]:
        self._idle("switch conversations")
        thread = await self.store.read(thread_id)
        self._adopt(thread)
        self._tell(thread, redraw=True)
        return {"resume": self.cut}

    def new(self) -> None:
        self._idle("start a new conversation")
        self.keeper.use(self.store)
        self.session.loop.history = []
        self.cut = None
        self.session.on_event(
            HostEvent("thread", {"id": None, "where": self._where(), "title": "", "items": []})
        )

    async def rename(self, thread_id: str, title: str) -> dict[str, Any]:
        title = " ".join(title.split())
        if not title:
            raise HostError("Give the conversation a name: it cannot be blank.")
        renamed = await self.store.rename(thread_id, title[:120])
        if self.keeper.thread and self.keeper.thread["id"] == thread_id:
            self.keeper.thread["title"] = renamed["title"]
            self.session.on_event(HostEvent("thread", self._current()))
        return renamed

    async def delete(self, thread_id: str) -> None:
        current = self.keeper.thread and self.keeper.thread["id"] == thread_id
        if current:
            self._idle("delete this conversation")
        await self.store.delete(thread_id)
        if current:
            self.new()

    async def export(self, thread_id: Any, format: str) -> dict[str, str]:
        """A conversation as a file: {name, type, text}, Markdown or JSON."""
        chosen = str(thread_id) if thread_id else (self.keeper.thread or {}).get("id")
        if not chosen:
            raise HostError("There is nothing to export yet: this conversation is empty.")
        thread = await self.store.read(chosen)
        name = "".join(c if c.isalnum() else "-" for c in thread["title"]).strip("-")[:60]
        if format == "markdown":
            return {"name": f"{name or 'conversation'}.md", "type": "text/markdown",
                    "text": markdown(thread)}  # fmt: skip
        if format == "json":
            kept = {k: v for k, v in thread.items() if k not in ("answering", "size")}
            return {"name": f"{name or 'conversation'}.json", "type": "application/json",
                    "text": json.dumps(kept, indent=2, ensure_ascii=False)}  # fmt: skip
        raise HostError(f"A conversation exports as markdown or json, not {format!r}.")

    async def refresh(self) -> dict[str, Any] | None:
        """What another tab added to the current thread, drawn here (the page regained focus,
        or a send was refused); None when nothing changed."""
        current = self.keeper.thread
        if current is None or self.session.loop.running:
            return None
        try:
            thread = await self.store.read(current["id"])
        except ThreadRefused as refused:
            if refused.status != 404 or self.keeper.thread is not current:
                raise
            self.new()  # deleted in another tab
            return None
        # Meanwhile this page may have switched, sent or kept more: then it knows better.
        if self.keeper.thread is not current or self.session.loop.running:
            return None
        if thread["version"] == current["version"]:
            return None
        self._adopt(thread)
        self._tell(thread, redraw=True)
        return {"resume": self.cut}

    async def sign(self, signed_in: bool) -> dict[str, Any]:
        """The person signed in or out in this page: a new conversation starts, kept where they
        now are. Signing in offers to keep this browser's conversation in their account
        (`offer`: its summary, for `keep`); signing out leaves the account's conversations on
        the server, and off this screen."""
        if signed_in == self.signed_in:
            return {"offer": None}
        self._idle("sign in or out")
        was = (self.keeper.thread or {}).get("id") if self.signed_in is False else None
        self.signed_in = signed_in
        self.new()
        return {"offer": await self._offer(was) if signed_in else None}

    async def keep_here(self, thread_id: str) -> dict[str, Any]:
        """Move one of this browser's conversations into the signed-in person's account: it is
        kept there, opened here, and gone from this browser."""
        if not self.signed_in:
            raise HostError("Sign in first: the conversation is then kept in your account.")
        thread = await self.local.read(thread_id)
        made = await self.server.create(
            {
                "messages": thread["messages"],
                "items": thread["items"],
                "answering": False,
                "tab": self.keeper.tab,
                "title": thread["title"],
            }
        )
        await self.local.delete(thread_id)
        return await self.open(made["id"])

    async def _offer(self, preferred: str | None) -> dict[str, Any] | None:
        """The conversation this browser keeps that signing in offers to move: the one that was
        on the screen, else the newest."""
        threads = (await self.local.listed())["threads"]
        chosen = [t for t in threads if t["id"] == preferred] or threads
        return chosen[0] if chosen else None

    # -- inside ----------------------------------------------------------------------------

    def _adopt(self, thread: dict[str, Any]) -> None:
        self.session.loop.history = self.keeper.opened(thread)
        self.cut = self._cut(thread)

    def _cut(self, thread: dict[str, Any]) -> str | None:
        answering = thread.get("answering")
        if not answering:
            return None
        # The server says whether the answer is stale; what the widget read from this
        # browser's storage says when it began.
        stale = answering.get("stale", answering.get("since", 0) < time.time() - ANSWERING_SECONDS)
        if answering.get("tab") != self.keeper.tab and not stale:
            return "elsewhere"
        pending = self.session.loop.pending_calls()
        if pending:
            first = pending[0]
            tool = self.session.toolbox.tool(first.name)
            decided = any(
                item.get("type") == "approval" and item.get("call_id") == first.id
                for item in thread.get("items") or []
            )
            asks = tool is not None and needs_approval(tool.side_effect)
            return "approval" if asks and not decided else "interrupted"
        kept = self.signed_in and thread.get("streaming") and self.session.can_reattach()
        return "stream" if kept else "interrupted"

    def _idle(self, what: str) -> None:
        if self.session.loop.running:
            raise HostError(f"Stop the assistant (or wait for it) before you {what}.")

    def _created(self, thread: dict[str, Any]) -> None:
        self.session.on_event(HostEvent("thread", self._current()))

    def _current(self) -> dict[str, Any]:
        thread = self.keeper.thread or {}
        return {"id": thread.get("id"), "where": self._where(), "title": thread.get("title", "")}

    def _tell(self, thread: dict[str, Any], *, redraw: bool) -> None:
        event = {**self._current(), "title": thread["title"]}
        if redraw:
            event["items"] = thread.get("items") or []
        self.session.on_event(HostEvent("thread", event))

    def _where(self) -> str:
        return "server" if self.signed_in else "local"
