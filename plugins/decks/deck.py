"""A deck spec: its schema, the one check every writer runs, and the shapes a model reads.

The page and the server both import this module, so a deck the page accepts is a deck the
server accepts. It is pure Python: no starlette, no `js`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reactor import urls
from reactor.errors import NotFoundError, ToolError
from reactor.schema import argument_problems

DECK_SCHEMA: dict[str, Any] = json.loads(
    Path(__file__).with_name("deck.schema.json").read_text(encoding="utf-8")
)

# Measured as `json.dumps` writes it (ASCII-escaped), the largest encoding a client sends,
# so a deck the page accepts always fits the server's 1 MiB body limit.
MAX_DECK_BYTES = 1_000_000

# Messages quote the offending value whole; a 20 kB body must not come back in the sentence.
_MAX_MESSAGE = 200


def deck_problems(spec: Any) -> list[dict[str, str]]:
    """Each way `spec` is not a valid deck, as {path, message}; [] when it is one."""
    problems = [
        {"path": p["path"], "message": _shorten(p["message"])}
        for p in argument_problems(DECK_SCHEMA, spec)
    ]
    if not problems:
        size = len(json.dumps(spec).encode())
        if size > MAX_DECK_BYTES:
            problems.append(
                {
                    "path": "$",
                    "message": f"the deck is {size} bytes as JSON; the limit is {MAX_DECK_BYTES}",
                }
            )
    return problems


def problems_sentence(problems: list[dict[str, str]]) -> str:
    """One sentence naming every problem, for a model or a person to fix in one go."""
    listed = "; ".join(f"{p['path']}: {p['message']}" for p in problems)
    return f"The deck is not valid: {listed}."


def check_deck(spec: Any) -> None:
    """Return when `spec`, a deck a caller asked to write, is a valid deck; else refuse the
    request (`invalid_arguments`) naming every problem."""
    problems = deck_problems(spec)
    if problems:
        raise ToolError("invalid_arguments", problems_sentence(problems))


def deck_summary(spec: dict[str, Any]) -> dict[str, Any]:
    return {"id": spec["id"], "title": spec["title"], "slides": len(spec["slides"])}


def deck_outline(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Slide numbers and titles: enough for a model to pick the slide to read or change."""
    return [
        {"slide": number, "title": slide["title"]} for number, slide in enumerate(spec["slides"], 1)
    ]


def slide_index(spec: dict[str, Any], number: int, *, insert: bool = False) -> int:
    """The list index of slide `number` (1-based); with `insert`, one past the last is allowed.
    A slide that is not there is `not_found`; a place a slide cannot be inserted at is
    `invalid_arguments`."""
    count = len(spec["slides"])
    last = count + 1 if insert else count
    if not 1 <= number <= last:
        if insert:
            raise ToolError(
                "invalid_arguments",
                f"A new slide can take the numbers 1 to {last}; there is no slide {number} "
                "to insert.",
            )
        have = "only slide 1" if count == 1 else f"slides 1 to {count}"
        raise NotFoundError(f"The deck has {have}; there is no slide {number}.")
    return number - 1


def slugify(title: str) -> str:
    """A deck id made from a title: 'Q3 Révision!' -> 'q3-revision'."""
    return urls.slugify(title, limit=48, fallback="deck")


def _shorten(message: str) -> str:
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 1] + "…"
