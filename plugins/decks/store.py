"""The page's decks: held in memory, loaded lazily from the decks server and saved back to it.

Every change is validated whole before anything is touched. Then the page copy changes and
the whole deck is sent to the server, naming the version it replaces. When the server cannot be
reached the change is kept in the page and the answer says it was not saved; when the server
refuses the change (a 4xx), the page copy is rolled back and its sentence is raised. When someone
else saved the deck first (409), the page takes the server's current deck and the caller is told
to read it and make the change again (`conflict`): no write is lost without anyone knowing.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

from reactor.errors import NotFoundError, ToolError
from reactor.http import refusal_code, tool_refusal
from reactor.page import HttpError, Page
from reactor.urls import quote_segment

from .deck import check_deck, deck_problems, deck_summary, problems_sentence


class DeckStore:
    """Decks by id. `api` is the decks API's base path, or None for a page-only store."""

    def __init__(self, page: Page, api: str | None = None) -> None:
        self._page = page
        self._api = api.rstrip("/") if api else None
        self._decks: dict[str, dict[str, Any]] = {}  # full specs the page holds
        self._remote: dict[str, dict[str, Any]] = {}  # summaries of server decks not fetched yet
        self._unsaved: dict[str, str] = {}  # id -> "PUT" | "DELETE" the server has not had yet
        self._versions: dict[
            str, int
        ] = {}  # id -> the server's version the page's copy is based on
        self._indexed = self._api is None
        self._index_lock = asyncio.Lock()
        self.warning = ""  # why the list may be incomplete, while the server is down

    @property
    def has_server(self) -> bool:
        return self._api is not None

    def ids(self) -> list[str]:
        return sorted({*self._decks, *self._remote})

    def title_of(self, id: str) -> str:
        """The deck's title as this page last saw it, else its id (no request: for words on
        screen)."""
        known = self._decks.get(id) or self._remote.get(id) or {}
        return str(known.get("title") or id)

    async def title(self, id: str) -> str:
        """The deck's title, learning the server's decks first when the page has not yet (a
        question asked right after a reload); its id when there is no such deck or no server."""
        try:
            await self._ensure_index()
        except (ConnectionError, OSError):  # the words say the id instead
            pass
        return self.title_of(id)

    def is_saved(self, id: str) -> bool:
        return id not in self._unsaved

    async def list_decks(self) -> list[dict[str, Any]]:
        """Summaries {id, title, slides} by title; a deck the server lacks says "saved": false."""
        await self._ensure_index()
        summaries = [*map(deck_summary, self._decks.values()), *self._remote.values()]
        for summary in summaries:
            if summary["id"] in self._unsaved:
                summary["saved"] = False
        return sorted(summaries, key=lambda s: (s["title"].casefold(), s["id"]))

    async def get_deck(self, id: str) -> dict[str, Any]:
        """A copy of the deck's spec; NotFoundError naming the decks there are when it is
        unknown."""
        await self._ensure_index()
        if id in self._decks:
            return copy.deepcopy(self._decks[id])
        if id not in self._remote:
            raise NotFoundError(self._unknown(id))
        try:
            spec = await self._page.fetch_json("GET", self._url(id))
        except HttpError as error:
            if error.status == 404:
                self._remote.pop(id, None)
                raise NotFoundError(self._unknown(id)) from None
            raise ConnectionError(
                f"The decks server could not give deck {id!r}: {error.detail}"
            ) from None
        except OSError as error:
            raise ConnectionError(
                f"The deck {id!r} is on the decks server, which cannot be reached right now "
                f"({error}); try again shortly."
            ) from None
        problems = deck_problems(spec)
        if problems:  # the server's copy is broken, not the caller's request
            raise ToolError("failed", problems_sentence(problems))
        self._decks.setdefault(id, spec)
        self._remote.pop(id, None)
        return copy.deepcopy(self._decks[id])

    async def create_deck(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Add a new deck; `conflict` when its id is taken. Answers the save report."""
        check_deck(spec)
        await self._ensure_index()
        if spec["id"] in self._decks or spec["id"] in self._remote:
            raise ToolError(
                "conflict",
                f"There is already a deck {spec['id']!r}; choose another id, or change that "
                "deck with decks_update_deck.",
                display=f"There is already a deck ‘{self.title_of(spec['id'])}’ with that id; "
                "nothing was overwritten.",
            )
        return await self._replace(spec, before=None)

    async def update_deck(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Replace an existing deck whole. Answers the save report."""
        check_deck(spec)
        before = await self.get_deck(spec["id"])
        return await self._replace(spec, before=before)

    async def delete_deck(self, id: str) -> dict[str, Any]:
        """Remove a deck from the page and the server. Answers the save report."""
        await self._ensure_index()
        if id not in self._decks and id not in self._remote:
            raise NotFoundError(self._unknown(id))
        held, remote = self._decks.pop(id, None), self._remote.pop(id, None)

        def undo() -> None:
            if id not in self._decks and id not in self._remote:
                if held is not None:
                    self._decks[id] = held
                elif remote is not None:
                    self._remote[id] = remote

        return await self._send(id, "DELETE", undo)

    async def _replace(
        self, spec: dict[str, Any], *, before: dict[str, Any] | None
    ) -> dict[str, Any]:
        stored = copy.deepcopy(spec)
        self._decks[stored["id"]] = stored

        def undo() -> None:
            # Only if no later change replaced ours while we waited for the server.
            if self._decks.get(stored["id"]) is stored:
                if before is None:
                    del self._decks[stored["id"]]
                else:
                    self._decks[stored["id"]] = before

        return await self._send(stored["id"], "PUT", undo)

    async def _send(self, id: str, method: str, undo: Callable[[], None]) -> dict[str, Any]:
        """Tell the server; {} for a page-only store, else {"saved": bool, "warning"?}."""
        if self._api is None:
            return {}
        try:
            await self._request(id, method)
        except HttpError as error:
            # a save came first: its deck is in the answer
            if error.status == 409 and "version" in error.body:
                raise self._conflict(id, error) from None
            if error.status < 500:
                undo()
                refusal = tool_refusal(error)
                if refusal is not None:
                    raise refusal from None
                raise ToolError(
                    refusal_code(error.status),
                    f"The decks server refused the change to deck {id!r}: {error.detail}",
                ) from None
            return self._kept(id, method, f"the server answered {error.status}: {error.detail}")
        except OSError as error:
            return self._kept(id, method, f"the server could not be reached: {error}")
        self._unsaved.pop(id, None)
        await self._retry_unsaved()
        return {"saved": True}

    async def _request(self, id: str, method: str) -> None:
        # 0: a deck the server must not have yet
        headers = {"if-match": f'"{self._versions.get(id, 0)}"'}
        try:
            answer = await self._page.fetch_json(
                method, self._url(id), self._decks[id] if method == "PUT" else None, headers
            )
        except HttpError as error:
            # never reached the server: already gone
            if not (method == "DELETE" and error.status == 404):
                raise
            answer = None
        if method == "PUT" and isinstance(answer, dict) and isinstance(answer.get("version"), int):
            self._versions[id] = answer["version"]
        elif method == "DELETE":
            self._versions.pop(id, None)

    def _conflict(self, id: str, error: HttpError) -> ToolError:
        """Someone else saved the deck first: the page takes the deck the server holds now."""
        self._unsaved.pop(id, None)
        current, version = error.body.get("current"), error.body.get("version")
        if isinstance(current, dict) and isinstance(version, int):
            self._decks[id], self._versions[id] = current, version
            return ToolError(
                "conflict",
                f"Someone else changed deck {id!r} since this page read it (it is now "
                f"version {version}); "
                "the page now holds their version. Read the deck again and make the change on it.",
            )
        self._decks.pop(id, None)
        self._versions.pop(id, None)
        return ToolError(
            "conflict",
            f"Someone else deleted deck {id!r} since this page read it; nothing was saved.",
        )

    def _kept(self, id: str, method: str, why: str) -> dict[str, Any]:
        self._unsaved[id] = method
        return {
            "saved": False,
            "warning": f"The change to deck {id!r} is kept in this page but was not saved ({why}). "
            "It is sent again with the next change the server accepts.",
        }

    async def _retry_unsaved(self) -> None:
        """The server is back: send what the page kept while it was down; stop at the first
        failure."""
        for id, method in list(self._unsaved.items()):
            if method == "PUT" and id not in self._decks:
                self._unsaved.pop(id)
                continue
            try:
                await self._request(id, method)
            except (HttpError, OSError):
                return
            self._unsaved.pop(id, None)

    async def _ensure_index(self) -> None:
        """Learn which decks the server has, once; while it is down, work with the page's decks."""
        if self._indexed:
            return
        async with self._index_lock:
            if self._indexed:
                return
            try:
                summaries = await self._page.fetch_json("GET", self._api or "")
            except HttpError as error:
                if error.status < 500:
                    raise ConnectionError(
                        f"The decks server refused to list the decks: {error.detail}"
                    ) from None
                self.warning = (
                    f"The decks server answered {error.status}, so only this page's "
                    "decks are listed."
                )
                return
            except OSError as error:
                self.warning = (
                    f"The decks server cannot be reached ({error}), so only this page's "
                    "decks are listed."
                )
                return
            for summary in summaries:
                id = summary["id"]
                if id not in self._decks and id not in self._unsaved:
                    self._remote[id] = {
                        "id": id,
                        "title": summary["title"],
                        "slides": summary["slides"],
                    }
                    if isinstance(summary.get("version"), int):
                        self._versions[id] = summary["version"]
            self._indexed = True
            self.warning = ""

    def _url(self, id: str) -> str:
        return f"{self._api}/{quote_segment(id)}"

    def _unknown(self, id: str) -> str:
        ids = self.ids()
        if not ids:
            sentence = (
                f"There is no deck {id!r}; there are no decks yet. Create one with "
                "decks_create_deck."
            )
        else:
            sentence = f"There is no deck {id!r}. Decks: {', '.join(ids)}."
        return f"{sentence} {self.warning}" if self.warning else sentence
