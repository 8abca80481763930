"""Every message the page's parts send each other, declared once: their types, the version of
the page <-> worker channel, the page link's close codes and its limit on one message.

Three conversations:
- the page's main thread and the reactor worker (web/protocol.js <-> reactor.protocol): a request
  is answered, a notice is not;
- the page's link for desktop agents, a WebSocket (web/agents.js and web/agent-socket.js <->
  reactor/server/agents/mcp.py): one JSON object `{"type": T, ...}` per message;
- the page and an AI Tool worker (web/tool-workers.js <-> web/ai-tool-worker.js).

This module is the source. web/protocol.js holds the same constants for the page's JavaScript,
which imports them from there: a page starts without fetching a declaration first.
tests/test_protocol.py reads that file under Node and fails, naming the constant, when the two
differ. Adding a message is one line here and its twin there; the checks on both sides (what a
side may send, what it answers a stranger with) read these sets. Plain data, no imports: the
server, the worker's Python and the tests all read it.
"""

from __future__ import annotations

#: The page <-> worker channel's version: every message carries it as `v`. The worker's
#: JavaScript speaks the version of the page's boot message until Python, started, says its own.
VERSION = 1

#: What the page asks the worker (each is answered).
PAGE_REQUESTS = frozenset(
    {
        "execute",
        "callTool",
        "definePlugin",
        "unloadPlugin",
        "commands",
        "commands.find",
        "bundles",
        "diagnostics",
        "chat.configure",
        "chat.label",
        "chat.send",
        "chat.tools",
        "chat.callTool",
        "chat.thread",
        "chat.resume",
    }
)
#: The requests that run something by name with arguments: the field that names it. Without a
#: signal, the worker's JavaScript hands them to `take_call` (web/reactor-worker.js, which is
#: given this by Python at start: the one constant web/protocol.js does not hold).
CALLS = {"execute": "command", "callTool": "name"}
#: What the page tells the worker without an answer. The `agents.*` ones drive the page's link
#: for desktop agents, which the worker's JavaScript holds (web/agent-socket.js): never Python.
PAGE_NOTICES = frozenset(
    {"chat.stop", "panel.event", "panels.unload", "agents.open", "agents.send", "agents.close"}
)
#: What the worker asks the page (each is answered).
WORKER_REQUESTS = frozenset(
    {
        "page.openTab",
        "page.fullscreen",
        "pageCommand.run",
        "chat.approve",
        "page.storage",
        "aiTool.run",
        "panel.open",
        "panel.close",
    }
)
#: What the worker tells the page: boot progress and failure, readiness, changes, views, chat.
WORKER_NOTICES = frozenset(
    {
        "progress",
        "fail",
        "ready",
        "bundles.changed",
        "commands.changed",
        "page.show",
        "chat.event",
        "aiTool.warm",
        "panel.draw",
        "panel.listen",
        "panel.unlisten",
        "agents.socket",
        "agents.call",
    }
)
#: The envelope's own keys: a message's fields may not take them.
ENVELOPE_KEYS = frozenset({"v", "id", "re", "type"})

#: What the server sends down the page's link: `hello` {page} first, `call` {call, tool,
#: arguments, agent}, `cancel` {call}, `claimed` {call, ok} (whether the page may run a call the
#: person allowed), `listed` {tools} (the tool list is had), `problem` {error} (what was wrong with
#: the page's last message).
LINK_DOWN = frozenset({"hello", "call", "cancel", "claimed", "listed", "problem"})
#: What the page sends up it: `answer` {call, envelope}, `claim` {call} (the person allowed it:
#: may it still run?), `tools` {tools}, `active` (the person is using the page), `where` {title,
#: route} (what it shows).
LINK_UP = frozenset({"answer", "claim", "tools", "active", "where"})
#: How the link closes: the page switched off (normal), a page of another site (before the
#: handshake: the browser sees a 403), the server stopping (the page links again, to another
#: process behind a balancer), its person signed out, too many pages linked.
LINK_CLOSE = {
    "normal": 1000,
    "notOwnPage": 1008,
    "serverStopping": 1012,
    "signedOut": 4401,
    "tooManyPages": 4429,
}
#: The closes a page does not link again after: trying again would not help.
LINK_REFUSED = frozenset({LINK_CLOSE["signedOut"], LINK_CLOSE["tooManyPages"]})
#: Characters of one message either way (a tool's answer: AI Tools cap theirs at 1,000,000 bytes).
LINK_MESSAGE_LIMIT = 2_000_000

#: What the page tells an AI Tool worker: `boot` {interpreter, snapshot, bundles, site, server},
#: `run` {id, job}, `abort` {id, reason}.
AI_TOOL_PAGE = frozenset({"boot", "run", "abort"})
#: What the worker tells the page: `booted`, `boot-failed` {message}, `done` {id, answer}.
AI_TOOL_WORKER = frozenset({"booted", "boot-failed", "done"})
