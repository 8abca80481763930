"""ScriptedModel: plans tool calls from plain commands, for demos and tests without an AI.

It understands "list decks", "open deck X at slide 4", "next slide", "previous slide",
"go to slide 3", "present", "import 1 post from the blog at URL" (or "import the latest post
from the demo blog", at the address the crawl tool's own schema names), "publish the page about Y"
and "show the page about Y", joined by "and" or "then". Words
become tools by name among those admitted (a "list" tool of the deck's plugin, a tool ending
in "_next_slide", ...), and an id is found by matching titles in earlier tool results —
listing first when nothing matches yet. It keeps no state: each turn is planned again from
the conversation, so it behaves the same after a reload.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..cancellation import CancelToken
from .model import END_TURN, TOOL_USE, ModelRequest, ModelTurn, ToolCall
from .tools import HostTool, outcome_line

LABEL = "Scripted model (no AI)"
_VERBS = (
    "list",
    "show",
    "open",
    "next",
    "previous",
    "prev",
    "back",
    "go",
    "present",
    "publish",
    "import",
)
_INTENTS = [
    (
        "import",
        re.compile(
            r"^import\s+(?:the\s+)?(?:(?P<limit>\d+)\s+posts?\s+from\s+(?:the\s+)?)?"
            r"(?P<noun>blog|feed|wordpress)(?:\s+site)?\s+(?:at|from)\s+(?P<url>\S+)$"
        ),
    ),
    (
        # "import the latest post from the demo blog": the address the tool's schema gives
        "import",
        re.compile(
            r"^import\s+(?:the\s+)?(?:(?:latest|newest|last)\s+)?(?:(?P<limit>\d+)\s+)?posts?\s+"
            r"from\s+the\s+demo\s+(?P<noun>blog|feed|wordpress)(?:\s+site)?$"
        ),
    ),
    (
        "show",
        re.compile(
            r"^show\s+(?:the\s+)?(?P<noun>page|post)\s+(?:about|called|titled|named)\s+(?P<what>.+)$"
        ),
    ),
    ("list", re.compile(r"^(?:list|show)(?:\s+(?:all|the|my))*\s+(?P<noun>[a-z]+?)s?$")),
    (
        "open",
        re.compile(
            r"^open\s+(?:the\s+)?(?:(?P<noun>deck|page|post)\s+)?(?P<what>.+?)"
            r"(?:\s+(?:at|on|to)\s+slide\s+(?P<slide>\d+))?$"
        ),
    ),
    ("next_slide", re.compile(r"^(?:go\s+to\s+)?(?:the\s+)?next(?:\s+slide)?$")),
    (
        "previous_slide",
        re.compile(r"^(?:go\s+)?(?:to\s+)?(?:the\s+)?(?:previous|prev|back)(?:\s+slide)?$"),
    ),
    ("go_to_slide", re.compile(r"^go\s+to\s+slide\s+(?P<slide>\d+)$")),
    ("present", re.compile(r"^present(?:\s+it|\s+the\s+deck)?$")),
    (
        "publish",
        re.compile(
            r"^publish\s+(?:the\s+)?(?:(?P<noun>page|post|article)\s+)?"
            r"(?:(?:about|called|titled|named)\s+)?(?P<what>.+)$"
        ),
    ),
]


@dataclass(frozen=True)
class _Step:
    name: str = ""
    args: Any = None
    lookup: bool = False
    say: str = ""


class ScriptedModel:
    """A Model that needs no provider: the label says so, and it never pretends otherwise."""

    label = LABEL

    async def complete(self, request: ModelRequest, signal: CancelToken) -> ModelTurn:
        signal.throw_if_aborted()
        tools = {tool.name: tool for tool in request.tools}
        start = max(
            (i for i, m in enumerate(request.messages) if m["role"] == "user"), default=None
        )
        if start is None:
            return ModelTurn(_help(tools))
        earlier = [m["result"] for m in request.messages[:start] if m["role"] == "tool"]
        done = _calls_since(request.messages[start:])
        clauses = _clauses(str(request.messages[start]["content"]))
        batch: list[_Step] = []
        notes: list[str] = []
        cursor, understood = 0, False
        for clause in clauses:
            intent = _intent(clause)
            if intent is None:
                notes.append(f"I cannot “{clause}”.")
                continue
            understood, looked_up, halt = True, False, False
            while True:
                known = earlier + [result for _, result in done[:cursor]]
                step = _next_step(intent, tools, known, looked_up)
                if step.say:
                    notes.append(step.say)
                    halt = True
                elif cursor < len(done) and done[cursor][0] == step.name:
                    name, result = done[cursor]
                    cursor += 1
                    if step.lookup:
                        looked_up = True
                        continue
                    notes.append(_summary(tools.get(name), name, result))
                    halt = not result.get("ok")
                else:
                    batch.append(step)
                    halt = step.lookup  # what follows waits for the listing
                break
            if halt:
                break
        if batch:
            calls = tuple(
                ToolCall(f"scripted_{len(request.messages)}_{i}", s.name, s.args)
                for i, s in enumerate(batch)
            )
            return ModelTurn("", calls, TOOL_USE, "tool_use")
        if not understood:
            return ModelTurn(_help(tools, notes[0] if notes else ""), (), END_TURN, "end_turn")
        said = list(dict.fromkeys(note for note in notes if note))
        return ModelTurn(" ".join(said) or "Done.", (), END_TURN, "end_turn")


def _calls_since(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    results = {m["tool_call_id"]: m["result"] for m in messages if m["role"] == "tool"}
    return [
        (c["name"], results[c["id"]])
        for m in messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
        if c["id"] in results
    ]


def _clauses(text: str) -> list[str]:
    parts = re.split(r"\s*(?:[,;]|\bthen\b|\band\b)\s*", text.lower().strip().strip(".!?"))
    clauses: list[str] = []
    for part in filter(None, parts):
        if clauses and not part.startswith(_VERBS):
            clauses[-1] += f" and {part}"  # "and" inside a title, not between commands
        else:
            clauses.append(part.strip(" “”\"'"))
    return clauses


def _intent(clause: str) -> dict[str, Any] | None:
    for kind, pattern in _INTENTS:
        match = pattern.match(clause)
        if match:
            return {"kind": kind, **{k: v for k, v in match.groupdict().items() if v}}
    return None


def _next_step(
    intent: dict[str, Any], tools: dict[str, HostTool], known: list[Any], looked_up: bool
) -> _Step:
    kind = intent["kind"]
    if kind == "import":
        name = next(
            (n for n in tools if "crawl" in n.split("_") and intent["noun"] in n.split("_")), ""
        )
        if not name:
            return _Step(say=f"I have no tool to import from a {intent['noun']}.")
        url = intent.get("url") or _demo_address(tools[name])
        if not url:
            return _Step(
                say=f"I do not know where the demo {intent['noun']} is; say “import 1 post from "
                "the blog at <address>”."
            )
        return _Step(name, {"url": url, "limit": int(intent.get("limit", 1))})
    if kind == "list":
        name = _find(tools, "list", intent["noun"])
        return _Step(name, {}) if name else _Step(say=f"I have no tool to list {intent['noun']}s.")
    if kind in ("next_slide", "previous_slide", "present", "go_to_slide"):
        name = next((n for n in tools if n.endswith("_" + kind)), "")
        if not name:
            return _Step(say=f"I have no tool to {kind.replace('_', ' ')}.")
        return _Step(name, {"slide": int(intent["slide"])} if kind == "go_to_slide" else {})
    verb, noun = kind, intent.get("noun", "deck" if kind == "open" else "page")
    if verb in ("show", "publish") and noun in ("post", "article"):
        noun = "page"  # CMS tools call every entry, page or post, a site page
    name = _find(tools, verb, noun)
    if not name:
        return _Step(say=f"I have no tool to {verb} a {noun}.")
    what = re.sub(rf"^the\s+|\s+{noun}$", "", intent["what"]).strip(" “”\"'")
    item = _match(known, what)
    if item is None:
        lister = _find(tools, "list", noun, prefix=name.split("_")[0])
        if lister and not looked_up:
            return _Step(lister, {}, lookup=True)
        return _Step(say=f"I could not find a {noun} called “{what}”.")
    args = _arguments(tools[name], item, intent.get("slide"))
    return (
        _Step(name, args)
        if args is not None
        else _Step(say=f"I do not know what {name} needs for “{what}”.")
    )


def _demo_address(tool: HostTool) -> str:
    """The demo source a crawl tool's `url` parameter names in its description ("A path such as
    /demo-sources/blog/ means the CMS server itself"), or ""."""
    said = str(tool.parameters.get("properties", {}).get("url", {}).get("description", ""))
    found = re.search(r"(?<![\w/])/[\w./-]*demo[\w./-]*", said)
    return found.group(0).rstrip(".") if found else ""


def _find(tools: dict[str, HostTool], verb: str, noun: str, prefix: str = "") -> str:
    """The admitted tool whose name holds `verb`, best when the noun follows it (list_decks)."""
    best, score = "", 0
    for name in tools:
        words = name.split("_")
        if verb not in words or (prefix and words[0] != prefix):
            continue
        at = words.index(verb)
        points = (
            1
            + any(w.startswith(noun) for w in words)
            + any(w.startswith(noun) for w in words[at + 1 : at + 2])
        )
        if points > score:
            best, score = name, points
    return best


def _match(results: list[Any], what: str) -> dict[str, Any] | None:
    """The item, newest results first, whose id is `what` or whose title holds it."""
    items = [item for result in reversed(results) for item in _items(result.get("result"))]
    for test in (
        lambda i: what in (str(i.get("id", "")).lower(), str(i.get("slug", "")).lower()),
        lambda i: _title(i) == what,
        lambda i: what in _title(i) or (_title(i) and _title(i) in what),
    ):
        for item in items:
            if test(item):
                return item
    return None


def _items(value: Any, depth: int = 0) -> list[dict[str, Any]]:
    if depth > 3:
        return []
    if isinstance(value, list):
        return [i for v in value for i in _items(v, depth + 1)]
    if isinstance(value, dict):
        own = [value] if ("id" in value or "slug" in value) and _title(value) else []
        return own + [
            i for v in value.values() if isinstance(v, (list, dict)) for i in _items(v, depth + 1)
        ]
    return []


def _title(item: dict[str, Any]) -> str:
    return str(item.get("title") or item.get("name") or "").lower()


def _arguments(tool: HostTool, item: dict[str, Any], slide: str | None) -> dict[str, Any] | None:
    properties = tool.parameters.get("properties", {})
    args: dict[str, Any] = {}
    for key in properties:
        if key in item:
            args[key] = item[key]
        elif key.endswith("id") and "id" in item:
            args[key] = item["id"]
    if slide and "slide" in properties:
        args["slide"] = int(slide)
    required = tool.parameters.get("required", [])
    return args if all(key in args for key in required) else None


def _summary(tool: HostTool | None, name: str, envelope: dict[str, Any]) -> str:
    """The reply's words for a finished call. Its card already shows the call's line (the tool's
    summary, or its failure in the person's words): the reply says what to do next instead."""
    if not envelope.get("ok"):
        return "That did not work; its card says why."
    result = envelope.get("result")
    if isinstance(result, list):
        lists = [result]
    else:  # a listing wrapped in an object, as {"decks": [...]}
        lists = (
            [v for v in result.values() if isinstance(v, list)] if isinstance(result, dict) else []
        )
    items = [item for listed in lists for item in _items(listed)]
    if items and not (tool and tool.summary):  # no line of its own on the card: the listing is news
        listed = ", ".join(
            f"{i.get('title') or i.get('name')} ({i.get('id', i.get('slug'))})" for i in items
        )
        return f"Found {len(items)}: {listed}."
    if not (tool and tool.summary):
        return outcome_line(tool, {}, envelope)
    return _next_step_hint(name, result, items)


def _next_step_hint(name: str, result: Any, items: list[dict[str, Any]]) -> str:
    """What the person can say next, in words this model understands ("" when nothing follows)."""
    words = name.split("_")
    noun = "deck" if any(w.startswith("deck") for w in words) else "post"
    first = str(items[0].get("title") or items[0].get("name") or "") if items else ""
    if "crawl" in words and first:
        return f"Nothing is published: say “publish the post about {first}” when it should be."
    if "list" in words and first:
        if noun == "deck":
            return f"Say “open deck {first}” to open one."
        return f"Say “show the post about {first}” to open a published one."
    if "open" in words and noun == "deck":
        return "←/→ move through the slides; say “present” to fill the screen."
    if words[-1] == "present":
        return "Esc leaves the presentation."
    if "publish" in words and isinstance(result, dict) and result.get("title"):
        return f"Say “show the post about {result['title']}” to open its public page."
    return ""


def examples(tools: Iterable[HostTool]) -> list[str]:
    """Up to three things to type that this model turns into calls of these tools."""
    found: list[str] = []
    for tool in tools:
        words = tool.name.split("_")
        example = ""
        if "crawl" in words and "blog" in words:
            known = _demo_address(tool)  # the demo's own blog, when the tool's schema names one
            example = (
                "import the latest post from the demo blog"
                if known
                else "import 1 post from the blog at https://…"
            )
        elif "list" in words:
            after = words[words.index("list") + 1 :]
            noun = after[-1] if after else words[0]
            example = f"list {noun if noun.endswith('s') else noun + 's'}"
        elif tool.name.endswith("_go_to_slide"):
            example = "go to slide 2"
        elif tool.name.endswith(("_next_slide", "_present")):
            example = "next slide" if tool.name.endswith("_next_slide") else "present"
        elif "open" in words and "slide" in tool.parameters.get("properties", {}):
            example = f"open {words[0].rstrip('s')} <title> at slide 2"
        elif "publish" in words:
            example = "publish the page about <title>"
        if example and example not in found:
            found.append(example)
    return found[:3]


def _help(tools: dict[str, HostTool], cannot: str = "") -> str:
    """Two sentences: what went wrong (or what this is), then three things to try."""
    first = f"{cannot[:-1]}: I" if cannot else "I"
    tries = examples(tools.values())
    if not tries:
        return (
            f"{first} am a scripted model, not an AI, and this page gives me no tools I "
            "understand. Choose a model in Model settings to ask anything."
        )
    quoted = ", ".join(f"“{t}”" for t in tries[:-1]) + (
        f" or “{tries[-1]}”" if len(tries) > 1 else f"“{tries[0]}”"
    )
    return (
        f"{first} am a scripted model, not an AI, and only understand short commands for this "
        f"page's tools. Try {quoted}."
    )
