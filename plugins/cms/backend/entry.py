"""What an entry may hold, checked field by field, so every refusal names the field and value."""

from __future__ import annotations

import re
from typing import Any

from reactor import urls

COLLECTIONS = ("pages", "posts")
STATUSES = ("draft", "published")
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
SITE_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
LIMITS = {"title": 200, "slug": 80, "excerpt": 1000, "body": 100_000, "source_url": 2000}
WRITABLE = ("collection", "title", "slug", "excerpt", "body", "source_url")


class EntryError(ValueError):
    """A field the CMS refuses; `.field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def checked_fields(data: dict[str, Any], *, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields of `data`, each checked; EntryError for an unknown, missing or bad one."""
    for key in data:
        if key not in allowed:
            raise EntryError(key, f"{_short(key)!r} is not a field you can set here; use {', '.join(allowed)}.")
    for key in required:
        if key not in data:
            raise EntryError(key, f"The field {key!r} is missing.")
    return {key: check_field(key, value) for key, value in data.items()}


def check_field(key: str, value: Any) -> Any:
    if key == "collection":
        if value not in COLLECTIONS:
            raise EntryError(key, f"The collection {_short(value)!r} does not exist; use 'pages' or 'posts'.")
        return value
    if key in ("publish", "confirm", "dry_run"):
        if not isinstance(value, bool):
            raise EntryError(key, f"{key!r} must be true or false, not {_short(value)!r}.")
        return value
    if not isinstance(value, str):
        raise EntryError(key, f"{key!r} must be a string, not {type(value).__name__}.")
    if len(value) > LIMITS[key]:
        raise EntryError(key, f"{key!r} has {len(value)} characters; the most is {LIMITS[key]}.")
    if key == "title" and not value.strip():
        raise EntryError(key, "The title is empty; give the entry a title.")
    if key == "slug" and not SLUG.fullmatch(value):
        raise EntryError(
            key, f"The slug {_short(value)!r} is not valid: use lowercase letters, digits and single hyphens, like 'hello-world'."
        )
    if key == "source_url" and value and not value.startswith(("http://", "https://")):
        raise EntryError(key, f"The source URL {_short(value)!r} must start with http:// or https://.")
    return value


def slugify(title: str) -> str:
    """A slug from a title: 'Hello, World!' -> 'hello-world'; 'entry' when nothing is left."""
    return urls.slugify(title, limit=60, fallback="entry")


def free_slug(base: str, taken: set[str]) -> str:
    """`base`, or `base-2`, `base-3`... whichever is free."""
    candidate, number = base, 2
    while candidate in taken:
        candidate, number = f"{base}-{number}", number + 1
    return candidate


def _short(value: Any, limit: int = 60) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"
