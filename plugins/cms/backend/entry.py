"""What an entry may hold: its collections, statuses, slug form and field limits (the API's
declaration checks them, backend/api.py), and the slug a new entry gets."""

from __future__ import annotations

import re

from reactor import urls

COLLECTIONS = ("pages", "posts")
STATUSES = ("draft", "published")
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
SITE_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
LIMITS = {"title": 200, "slug": 80, "excerpt": 1000, "body": 100_000, "source_url": 2000}
WRITABLE = ("collection", "title", "slug", "excerpt", "body", "source_url")


def slugify(title: str) -> str:
    """A slug from a title: 'Hello, World!' -> 'hello-world'; 'entry' when nothing is left."""
    return urls.slugify(title, limit=60, fallback="entry")


def free_slug(base: str, taken: set[str]) -> str:
    """`base`, or `base-2`, `base-3`... whichever is free."""
    candidate, number = base, 2
    while candidate in taken:
        candidate, number = f"{base}-{number}", number + 1
    return candidate
