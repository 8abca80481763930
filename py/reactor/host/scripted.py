"""ScriptedModel: plans tool calls from short commands, for demos and tests without an AI.

It knows no plugin: it reads the tools it is given. A command's first word is its verb, found in
a tool's name ("next page": a tool named …_next_page) or else in its description ("import …":
a tool whose description says it imports); every other word must be explained by the tool. A
parameter's name takes the number after it ("at page 4"); an integer parameter whose description
counts a noun takes "2 photos" or "the latest photo"; an address parameter takes a URL, or for
"the demo …" the demo address its own description gives. What is left is a title ("open note
Groceries", "the note about pricing"), found in earlier tool results for the tool's id
parameter, listing first with the plugin's list tool when nothing matches yet. Commands are
joined by "and" or "then". It keeps no state: each turn is planned again from the
conversation, so it behaves the same after a reload.
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
# Words that only join the others: never a verb, a noun or part of a title's edge.
_JOINING = frozenset("a an the to at on of in into from for with by it its my all and me".split())
# What introduces a title: "the note about pricing".
_NAMING = ("about", "called", "titled", "named")
# Words that count one: "the latest photo".
_ONE = frozenset({"a", "an", "one", "latest", "newest", "last"})
_ADDRESS = re.compile(r"^(?:https?://\S+|/\S*)$")
_WORD = re.compile(r"[a-z]+")
_Tools = dict[str, HostTool]
_Args = dict[str, Any]


@dataclass(frozen=True)
class _Step:
    name: str = ""
    args: Any = None
    lookup: bool = False
    say: str = ""


@dataclass(frozen=True)
class _Reading:
    """A command read against one tool: its arguments, its title (if it names an item), the
    words the tool does not explain, and how well its verb matched (`_verb_match`)."""

    tool: HostTool
    args: dict[str, Any]
    title: str
    unexplained: tuple[str, ...]
    verb_match: int
    nouns: int

    @property
    def fits(self) -> bool:
        needed = [k for k in _required(self.tool) if k not in self.args]
        key = _key(self.tool)
        if self.title:
            return not self.unexplained and key is not None and needed == [key]
        return not self.unexplained and not needed


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
        clauses = _clauses(str(request.messages[start]["content"]), tools)
        batch: list[_Step] = []
        notes: list[str] = []
        cursor, understood = 0, False
        for clause in clauses:
            readings = _readings(clause, tools)
            if not readings:
                notes.append(f"I cannot “{clause}”.")
                continue
            understood, looked_up, halt = True, False, False
            while True:
                known = earlier + [result for _, result in done[:cursor]]
                step = _next_step(clause, readings[0], tools, known, looked_up)
                if step.say:
                    notes.append(step.say)
                    halt = True
                elif cursor < len(done) and done[cursor][0] == step.name:
                    name, result = done[cursor]
                    cursor += 1
                    if step.lookup:
                        looked_up = True
                        continue
                    notes.append(_summary(tools.get(name), tools, result))
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


def _clauses(text: str, tools: dict[str, HostTool]) -> list[str]:
    """The commands in `text`; an "and" before a word no tool knows is inside a title."""
    parts = re.split(r"\s*(?:[,;]|\bthen\b|\band\b)\s*", text.lower().strip().strip(".!?"))
    clauses: list[str] = []
    for part in filter(None, parts):
        if clauses and not any(_verb_match(part.split()[0], tool) for tool in tools.values()):
            clauses[-1] += f" and {part}"
        else:
            clauses.append(part.strip(" “”\"'"))
    return clauses


def _name_words(tool: HostTool) -> list[str]:
    """The words of a tool's name after its plugin's: notes_open_next → open, next."""
    words = tool.name.lower().replace("-", "_").split("_")
    return words[1:] if len(words) > 1 else words


def _same(word: str, named: str) -> bool:
    """Whether a typed word means a word of a name: "note" and "notes", "prev" and "previous"."""
    if word in (named, named + "s") or named == word + "s":
        return True
    return len(word) >= 4 and named.startswith(word)


def _verb_match(verb: str, tool: HostTool) -> int:
    """4 when the verb is the first word of the tool's name, 3 another word of it, 2 when it
    starts one, 1 when its description uses it, 0 otherwise."""
    if verb in _JOINING:
        return 0
    words = _name_words(tool)
    if verb == words[0]:
        return 4
    if verb in words:
        return 3
    if any(_same(verb, w) for w in words):
        return 2
    said = set(_WORD.findall(tool.description.lower()))
    return 1 if verb in said or verb + "s" in said else 0


def _properties(tool: HostTool) -> dict[str, Any]:
    properties = tool.parameters.get("properties", {})
    return properties if isinstance(properties, dict) else {}


def _required(tool: HostTool) -> list[str]:
    return list(tool.parameters.get("required", []))


def _is_address(name: str, schema: dict[str, Any]) -> bool:
    return name == "url" or name.endswith("_url") or schema.get("format") == "uri"


def _key(tool: HostTool) -> str | None:
    """The required text parameter that names an item (id, slug), or None."""
    for name in _required(tool):
        schema = _properties(tool).get(name, {})
        text = schema.get("type") == "string" and "enum" not in schema
        if text and not _is_address(name, schema):
            return name
    return None


def _readings(clause: str, tools: dict[str, HostTool]) -> list[_Reading]:
    """The clause read against each tool its verb names, best first; none when no tool knows
    the verb. "go to the next page" is read without its "go to" when nothing fits with it."""
    words = clause.split()
    if not words:
        return []
    found = [_read(words, tool) for tool in tools.values() if _verb_match(words[0], tool)]
    shorter = words[1:]
    while shorter and shorter[0] in _JOINING:
        shorter = shorter[1:]
    if not any(r.fits for r in found) and words[0] == "go" and shorter:
        again = [_read(shorter, tool) for tool in tools.values() if _verb_match(shorter[0], tool)]
        if any(r.fits for r in again):
            found = again
    return sorted(found, key=_rank)


def _rank(reading: _Reading) -> tuple[bool, int, int, int]:
    """Fitting readings first, then the better verb, the more nouns, the fewer required."""
    return not reading.fits, -reading.verb_match, -reading.nouns, len(_required(reading.tool))


def _read(words: list[str], tool: HostTool) -> _Reading:
    properties = _properties(tool)
    integers = {n for n, s in properties.items() if s.get("type") == "integer"}
    names = _name_words(tool) + tool.name.lower().split("_")[:1]
    args: dict[str, Any] = {}
    rest: list[str] = []
    index = 1
    while index < len(words):
        word, after = words[index], words[index + 1] if index + 1 < len(words) else ""
        named = next((n for n in integers if _same(word, n) or _same(n, word)), None)
        if named and after.isdigit():  # "page 4"
            args[named] = int(after)
            index += 2
            continue
        counted = _counting(tool, integers, after)
        if counted and (word.isdigit() or word in _ONE):  # "2 photos", "the latest photo"
            args[counted] = int(word) if word.isdigit() else 1
            index += 2
            continue
        if _ADDRESS.match(word):
            address = next((n for n, s in properties.items() if _is_address(n, s)), None)
            if address:
                args[address] = word
                index += 1
                continue
        rest.append(word)
        index += 1
    address = next((n for n, s in properties.items() if _is_address(n, s) and n not in args), None)
    if address and "demo" in rest and _demo_address(properties[address]):
        args[address] = _demo_address(properties[address])
        rest.remove("demo")
    title = _title_in(rest, names) if _key(tool) and _key(tool) not in args else ""
    plain = [w for w in rest if w not in _JOINING and not any(_same(w, n) for n in names)]
    left = [] if title else plain
    nouns = sum(1 for w in rest if any(_same(w, n) for n in names))
    return _Reading(tool, args, title, tuple(left), _verb_match(words[0], tool), nouns)


def _counting(tool: HostTool, integers: set[str], noun: str) -> str | None:
    """The integer parameter whose name or description counts `noun` ("At most this many
    photos")."""
    if not noun.isalpha() or noun in _JOINING:
        return None
    for name in sorted(integers):
        said = set(_WORD.findall(str(_properties(tool)[name].get("description", "")).lower()))
        if _same(noun, name) or noun in said or noun + "s" in said:
            return name
    return None


def _title_in(rest: list[str], names: list[str]) -> str:
    """The title a command names: after "about"/"called"/…, else its words without the joining
    words and the tool's own nouns at either end ("the groceries note" → "groceries")."""
    words = list(rest)
    for at, word in enumerate(words):
        if word in _NAMING:
            words = words[at + 1 :]
            break
    edge = lambda w: w in _JOINING or any(_same(w, n) for n in names)  # noqa: E731
    while words and edge(words[0]):
        words.pop(0)
    while words and edge(words[-1]):
        words.pop()
    return " ".join(words).strip(" “”\"'")


def _next_step(clause: str, best: _Reading, tools: _Tools, known: list[Any], seen: bool) -> _Step:
    """The call for the best reading, its listing first (unless `seen`), or what to say."""
    tool = best.tool
    if not best.fits:
        return _Step(say=f"I cannot “{clause}” with the tools I have.")
    if not best.title:
        return _Step(tool.name, best.args)
    item = _match(known, best.title)
    if item is None:
        lister = _lister(tool, tools)
        if lister and not seen:
            return _Step(lister.name, {}, lookup=True)
        return _Step(say=f"I could not find a {_noun(tool)} called “{best.title}”.")
    args = _arguments(tool, item, best.args)
    if args is None:
        return _Step(say=f"I do not know what to give for “{best.title}”.")
    return _Step(tool.name, args)


def _noun(tool: HostTool) -> str:
    """What a tool acts on, from its name: notes_open → "note", shop_show_order → "order"."""
    words = tool.name.lower().split("_")
    after = words[2:] if len(words) > 2 else []
    return " ".join(after) if after else words[0].removesuffix("s")


def _phrase(tool: HostTool) -> str:
    """The command that calls a tool: its name's words, with its plugin's noun when the name has
    only a verb (notes_open → "open note")."""
    words = _name_words(tool)
    return " ".join(words) if len(words) > 1 else f"{words[0]} {_noun(tool)}"


def _lister(tool: HostTool, tools: dict[str, HostTool]) -> HostTool | None:
    """The plugin's tool that lists what `tool` acts on: a "list" tool needing nothing, best one
    that only reads and names that noun (notes_open: notes_list_notes, not notes_show_list)."""
    plugin, noun = tool.name.split("_")[0], _noun(tool).split()[-1]

    def fit(other: HostTool) -> tuple[bool, bool]:
        return other.side_effect == "read", any(_same(noun, w) for w in _name_words(other))

    same = [t for t in tools.values() if t.name.split("_")[0] == plugin and not _required(t)]
    return max((t for t in same if "list" in _name_words(t)), key=fit, default=None)


def _demo_address(schema: dict[str, Any]) -> str:
    """The demo source an address parameter's description names ("A path such as
    /demo/photos/ means this server itself"), or ""."""
    said = str(schema.get("description", ""))
    found = re.search(r"(?<![\w/])/[\w./-]*demo[\w./-]*", said)
    return found.group(0).rstrip(".") if found else ""


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


def _arguments(tool: HostTool, item: _Args, given: _Args) -> _Args | None:
    """The command's own arguments, and the item's for the rest (its id for a `…id` parameter)."""
    args: _Args = {}
    for key in _properties(tool):
        if key in given:
            args[key] = given[key]
        elif key in item:
            args[key] = item[key]
        elif key.endswith("id") and "id" in item:
            args[key] = item["id"]
    return args if all(key in args for key in _required(tool)) else None


def _summary(tool: HostTool | None, tools: dict[str, HostTool], envelope: dict[str, Any]) -> str:
    """The reply's words for a finished call. Its card already shows the call's line (the tool's
    summary, or its failure in the person's words): the reply says what to do next instead."""
    if not envelope.get("ok"):
        return "That did not work; its card says why."
    result = envelope.get("result")
    if isinstance(result, list):
        lists = [result]
    else:  # a listing wrapped in an object, as {"items": [...]}
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
    return _next_step_hint(tool, tools, items)


def _next_step_hint(tool: HostTool, tools: dict[str, HostTool], items: list[dict[str, Any]]) -> str:
    """After a listing, how to show one of its items, in words this model understands: the
    plugin's tool that shows an item by its id ("" when it has none)."""
    if not items or tool.side_effect not in ("read", "none") or "list" not in _name_words(tool):
        return ""
    first = str(items[0].get("title") or items[0].get("name") or "")
    shower = _shower(tool, tools, items[0])
    if shower is None or not first:
        return ""
    phrase = _phrase(shower)
    return f"Say “{phrase} {first}” to {phrase.split()[0]} one."


def _shower(tool: HostTool, tools: dict[str, HostTool], item: dict[str, Any]) -> HostTool | None:
    """The plugin's tool that changes only what the person sees and needs only `item`'s id."""
    plugin = tool.name.split("_")[0]
    for other in tools.values():
        key = _key(other)
        shows = other.side_effect == "none" and _required(other) == [key]
        if other.name.split("_")[0] != plugin or not shows:
            continue
        if key in item or (key is not None and key.endswith("id") and "id" in item):
            return other
    return None


def examples(tools: Iterable[HostTool]) -> list[str]:
    """Up to three things to type that this model turns into calls of these tools: a listing,
    then showing an item, then a command that needs nothing."""
    listings, openers, plain = [], [], []
    for tool in tools:
        properties, required, words = _properties(tool), _required(tool), _name_words(tool)
        if words[0] == "list" and not required:
            listings.append(_phrase(tool))
        elif tool.side_effect == "none" and required and required == [_key(tool)]:
            counts = [n for n, s in properties.items() if s.get("type") == "integer"]
            openers.append(f"{_phrase(tool)} <title>" + (f" at {counts[0]} 2" if counts else ""))
        elif tool.side_effect == "none" and not properties and "list" not in words:
            plain.append(_phrase(tool))
    found = [kind[0] for kind in (listings, openers, plain) if kind]
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
