"""An ASGI app served from a thread on a free loopback port: for tests and the bench, which need
the real HTTP server beside their own code (`reactor serve` runs it in the foreground instead)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

GRACE_SECONDS = 2  # a stop waits this long for requests to end; a page's WebSocket never does


def free_port() -> int:
    """A loopback port nothing listens on now (also: a port to find closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LoopbackServer:
    """Serve `app` on http://127.0.0.1:<free port> until `stop()`; also a context manager yielding
    its URL."""

    def __init__(self, app: Any, *, start_timeout: float = 20.0) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=GRACE_SECONDS,
            proxy_headers=False,  # whose X-Forwarded-* count is the app's to say (proxies.py)
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + start_timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"the server for {self.url} did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def __enter__(self) -> str:
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.stop()
