"""The one package that knows it runs in a browser: only its modules import `js` and `pyodide`.

It runs in Web Workers, never on the page's main thread. In the reactor worker, `start` answers
the page's messages (reactor.protocol) and gives plugins the page services (`WorkerPage`: views,
tabs and full screen are asked of the page); AI Tool code runs in the page's tool workers
(`WorkerRunner`), and inside one of those, `run_ai_tool` runs it. Everything else in reactor is
plain Python and runs on CPython too.

- boot.py          `start`: the page's messages answered, the plugins loaded, `ready`; `restored`
- worker_page.py   WorkerPage, PageStorage: the page's services, asked by message
- server_link.py   ServerLink: the reactor server, its URL and its session cookie
- sending.py       browser_send: the chat host's HTTP (fetch, streamed)
- signals.py       JsSignal: a JS AbortSignal as a CancelToken
- ai_tools.py      WorkerRunner (asks the page), run_ai_tool (inside a tool worker)
- agent_calls.py   AgentCalls: desktop agents' calls from the page's link
- chat.py          serve_chat: the page's chat, its session and conversations

The workers' JavaScript imports this package by name (`reactor.browser.start`, `run_ai_tool`,
`restored`), and the memory snapshot imports it whole (server/runtime/stdlib.py).
"""

from __future__ import annotations

from .agent_calls import AgentCalls
from .ai_tools import WorkerRunner, run_ai_tool
from .boot import restored, start
from .sending import browser_send
from .server_link import ServerLink
from .signals import JsSignal
from .worker_page import PageStorage, WorkerPage

__all__ = [
    "AgentCalls",
    "JsSignal",
    "PageStorage",
    "ServerLink",
    "WorkerPage",
    "WorkerRunner",
    "browser_send",
    "restored",
    "run_ai_tool",
    "start",
]
