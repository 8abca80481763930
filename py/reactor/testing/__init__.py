"""Testing reactor plugins in a real browser: a pytest plugin (reactor.testing.plugin, installed
with `pip install reactor[testing]`) whose fixtures run `reactor serve` for real, open its page in
Chromium and drive it as a person or the page's own code would; a demo recorder for READMEs.

Server-side only: the page's Python bundle leaves this package out.
"""

from __future__ import annotations

from .page import Exchange, PageCallError, ReactorPage
from .recording import Demo, Recorder
from .server import ReactorServer, ServerStartError, TestUser, UserExistsError
from .standins import StandIn, call, text

__all__ = [
    "Demo",
    "Exchange",
    "PageCallError",
    "ReactorPage",
    "ReactorServer",
    "Recorder",
    "ServerStartError",
    "StandIn",
    "TestUser",
    "UserExistsError",
    "call",
    "text",
]
