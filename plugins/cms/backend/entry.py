"""What an entry may hold: its collections, statuses, slug form and field limits (the API's
declaration checks them, backend/api.py), and the slug a new entry gets.

They are read from entry.schema.json, the file the CMS tools (agent-tools.json) refer to, so
what a tool lets a model send and what the API accepts are one declaration.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from reactor import urls

ENTRY_SCHEMA: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parent.parent / "entry.schema.json").read_text(encoding="utf-8")
)
_FIELDS = ENTRY_SCHEMA["properties"]
COLLECTIONS = tuple(_FIELDS["collection"]["enum"])
STATUSES = tuple(_FIELDS["status"]["enum"])
SLUG = re.compile(_FIELDS["slug"]["pattern"].removeprefix("^").removesuffix("$"))
WRITABLE = ("collection", "title", "slug", "excerpt", "body", "source_url")
LIMITS = {field: _FIELDS[field]["maxLength"] for field in WRITABLE if field != "collection"}


def slugify(title: str) -> str:
    """A slug from a title: 'Hello, World!' -> 'hello-world'; 'entry' when nothing is left."""
    return urls.slugify(title, limit=60, fallback="entry")


def free_slug(base: str, taken: set[str]) -> str:
    """`base`, or `base-2`, `base-3`... whichever is free."""
    candidate, number = base, 2
    while candidate in taken:
        candidate, number = f"{base}-{number}", number + 1
    return candidate
