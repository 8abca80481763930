"""The CMS API as the page calls it: every URL is built from the live state at call time, and
every refusal of the server comes back as the server's own sentence."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactor.errors import NotFoundError, ToolError
from reactor.http import refusal_code, tool_refusal
from reactor.page import HttpError, Page
from reactor.urls import on_origin_of, query_string, quote_segment

from .state import CmsState


class CmsClient:
    """Talks to the CMS server of `state.api`, as the user the session cookie names."""

    def __init__(
        self, page: Page, state: CmsState, on_session_lost: Callable[[], None] | None = None
    ) -> None:
        self.page = page
        self.state = state
        self.on_session_lost = on_session_lost  # the panel redraws signed out

    async def sign_out(self) -> None:
        await self._call("POST", self._auth("/auth/sign-out"), {})

    async def session(self) -> dict[str, Any]:
        return await self._call("GET", f"{self.state.api}/session")

    async def existing_session(self) -> dict[str, Any] | None:
        """The session a cookie from before a reload still holds, or None; changes no state."""
        try:
            return await self.page.fetch_json("GET", f"{self.state.api}/session")
        except HttpError as error:
            if error.status == 401:
                return None
            raise ConnectionError(
                f"The CMS server failed ({error.status}): {error.detail}"
            ) from None
        except OSError as error:
            raise ConnectionError(f"The CMS server cannot be reached right now: {error}") from None

    async def list_entries(self, **filters: str) -> dict[str, Any]:
        query = query_string({k: v for k, v in filters.items() if v})
        return await self._call("GET", self._site("/entries") + (f"?{query}" if query else ""))

    async def read_entry(self, slug: str) -> dict[str, Any]:
        return await self._call("GET", self._entry(slug))

    async def create_entry(self, fields: dict[str, Any]) -> dict[str, Any]:
        return await self._call("POST", self._site("/entries"), fields)

    async def update_entry(self, slug: str, changes: dict[str, Any]) -> dict[str, Any]:
        """Change fields, naming the version this page saw: someone else's change in between is a
        `conflict` (the server's 409), never overwritten."""
        version = self.state.versions.get(slug)
        return await self._call(
            "PATCH",
            self._entry(slug),
            changes if version is None else {**changes, "version": version},
        )

    async def set_published(self, slug: str, published: bool) -> dict[str, Any]:
        return await self._call(
            "POST", self._entry(slug) + ("/publish" if published else "/unpublish"), {}
        )

    async def delete_entry(self, slug: str) -> dict[str, Any]:
        return await self._call("DELETE", self._entry(slug) + "?" + query_string({"confirm": slug}))

    async def crawl(self, kind: str, args: dict[str, Any]) -> dict[str, Any]:
        return await self._call("POST", self._site("/crawl"), {"kind": kind, **args})

    def public_url(self, path: str) -> str:
        """An entry's public path, on the CMS server's origin (the page's own when the API is
        relative)."""
        return on_origin_of(self.state.api, path)

    def _site(self, tail: str) -> str:
        return f"{self.state.api}/sites/{quote_segment(self.state.require_site())}{tail}"

    def _entry(self, slug: str) -> str:
        return self._site(f"/entries/{quote_segment(slug)}")

    def _auth(self, path: str) -> str:
        return on_origin_of(self.state.api, path)

    async def _call(self, method: str, url: str, body: Any = None) -> Any:
        try:
            answer = await self.page.fetch_json(method, url, body)
        except HttpError as error:
            if error.status == 401:
                self.state.sign_out()
                if self.on_session_lost is not None:
                    self.on_session_lost()
            refusal = tool_refusal(error)
            if refusal is not None:
                raise refusal from None
            if error.status == 404:
                raise NotFoundError(error.detail) from None
            if error.status == 409 and isinstance(error.body.get("current"), dict):
                self.state.saw(error.body["current"])
                raise ToolError("conflict", error.detail) from None
            if error.status in (400, 409, 413, 415, 422):
                # a field breaks a rule, the slug is taken, the entry is published: the server's
                # sentence, which a person reads too when it is not someone else's change
                said = {"display": error.detail} if error.status == 409 else {}
                raise ToolError(refusal_code(error.status), error.detail, **said) from None
            raise ConnectionError(
                f"The CMS server failed ({error.status}): {error.detail}"
            ) from None
        except OSError as error:
            raise ConnectionError(
                f"The CMS server at {url} cannot be reached right now: {error}"
            ) from None
        if isinstance(answer, dict):  # the versions of what it names, for the next change of it
            entries = answer.get("entries")
            self.state.saw(*(entries if isinstance(entries, list) else [answer]))
        return answer
