"""The CMS state of this page: which API, who is signed in, which site is selected.

Tool handlers read it at call time, never at registration: switching the site in the panel
changes where the very next call goes. The session token itself is not kept here: the server
sets it as an HttpOnly cookie, which same-origin requests carry.
"""

from __future__ import annotations

from typing import Any

from reactor.errors import ToolError

# Nobody signed in: what the model reads, and what the person reads (a chat card, the palette).
SIGNED_OUT = (
    "Nobody is signed in in this page; ask the person to sign in at the top of the page, "
    "then try again."
)
SIGN_IN_FIRST = "Sign in at the top of the page first."


class CmsState:
    """Live page state; the panel changes it through commands (cms.signIn, cms.selectSite...)."""

    def __init__(self, api: str = "/api/cms") -> None:
        self.api = api
        self.username = ""
        self.sites: list[dict[str, Any]] = []  # [{id, title, role}] of the signed-in user
        self.site = ""
        self.current = ""  # the slug selected in the panel, or last created, read or shown
        self.versions: dict[str, int] = {}  # slug -> the version of it this page last saw

    def saw(self, *entries: dict[str, Any]) -> None:
        """Remember the versions of entries the server answered with (a change names its own)."""
        for entry in entries:
            if (
                isinstance(entry, dict)
                and isinstance(entry.get("slug"), str)
                and isinstance(entry.get("version"), int)
            ):
                self.versions[entry["slug"]] = entry["version"]

    @property
    def signed_in(self) -> bool:
        return bool(self.username)

    def role(self) -> str:
        return next((s["role"] for s in self.sites if s["id"] == self.site), "")

    def sign_out(self) -> None:
        self.username, self.sites, self.site, self.current = "", [], "", ""
        self.versions = {}

    def require_site(self) -> str:
        """The selected site; a sentence for the model and one for the person when there is none."""
        if not self.signed_in:
            raise ToolError("not_permitted", SIGNED_OUT, display=SIGN_IN_FIRST)
        if not self.site:
            names = ", ".join(s["id"] for s in self.sites) or "none"
            raise ToolError(
                "unavailable",
                "No CMS site is selected; ask the person to pick one in the CMS panel "
                f"(their sites: {names}).",
                display="Pick a site in the CMS panel first.",
            )
        return self.site
