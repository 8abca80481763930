"""The server's log lines: text (the default), or one JSON object a line (`reactor serve
--log-format json`), each carrying the id of the request it was written for.

`RequestLog` gives every request an id — a well-formed `X-Request-Id` from a trusted proxy
(server/proxies.py), else a new one — sends it back in the answer's `X-Request-Id`, holds it in
a context variable while the request is handled (so every line written meanwhile carries it) and
ends the request with one access line (logger `reactor.access`, at INFO): method, path, status,
duration, client. A line never holds a header, a query string or a body: no session, cookie,
token, password or key reaches the log by this module.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import sys
import time
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .proxies import PROXIED

FORMATS = ("text", "json")
REQUEST_ID: ContextVar[str] = ContextVar("reactor_request_id", default="")
WELL_FORMED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")  # nginx's $request_id is 32 hex
access = logging.getLogger("reactor.access")


def request_id(scope: Scope) -> str:
    """The id a trusted proxy gave the request, if it is one we can log as it is; else a new one."""
    if scope.get(PROXIED):
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                given = value.decode("latin-1").strip()
                if WELL_FORMED.fullmatch(given):
                    return given
                break
    return secrets.token_hex(16)


class RequestLog:
    """ASGI middleware: the request's id (context, answer header) and its access line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        ident = request_id(scope)
        token = REQUEST_ID.set(ident)
        started = time.perf_counter()
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            kind = message["type"]
            if kind == "http.response.start":
                status = message["status"]
                MutableHeaders(scope=message)["x-request-id"] = ident
            elif kind == "websocket.accept" and not status:
                status = 101
            elif kind == "websocket.close" and not status:
                status = 403  # closed before the handshake was accepted: the browser sees a 403
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            if access.isEnabledFor(logging.INFO):
                client = scope.get("client")
                method = scope.get("method", "WEBSOCKET")
                path = scope.get("path", "")[:200]
                access.info(
                    "%s %s %s",
                    method,
                    path,
                    status or 500,
                    extra={
                        "request": {
                            "method": method,
                            "path": path,
                            "status": status or 500,
                            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                            "client": client[0] if client else None,
                        }
                    },
                )
            REQUEST_ID.reset(token)


class JsonLines(logging.Formatter):
    """One JSON object a line: time, level, logger, message, request_id, and an access line's
    request fields (an exception's traceback as `exception`)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": REQUEST_ID.get() or None,
        }
        fields = getattr(record, "request", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure_logging(format: str) -> dict[str, Any]:
    """Set up the log for `format`; what uvicorn.Config takes (`log_config`, `access_log`): for
    text, uvicorn's own set-up as before (warnings and errors, the request lines left out); for
    JSON, every line of every logger on stderr as JSON, the access lines ours."""
    if format != "json":
        return {}
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    # Their INFO lines name what a log must not hold (MCP session ids, a provider's URL with its
    # query): warnings and errors only.
    for chatty in ("mcp", "httpx", "httpcore", "sse_starlette"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    logging.captureWarnings(True)  # Python's warnings too, as lines of the `py.warnings` logger
    return {"log_config": None, "access_log": False}
