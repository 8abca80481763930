"""uvicorn's server, stopping as a site expects of one process among several: on SIGTERM it
stops taking connections, then tells the agents waiting on it and the pages linked to it
(server/agents/), then answers what is in flight for up to GRACE_SECONDS and exits."""

from __future__ import annotations

import logging
import socket
from typing import Any

import uvicorn

GRACE_SECONDS = 2  # a stop waits this long for requests to end; a page's WebSocket never does


class GracefulServer(uvicorn.Server):
    """`uvicorn.Server` whose shutdown first stops the app's agents (`app.state.agents.stop()`),
    after the listening sockets are closed: a page told to link again reaches another process."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        agents = getattr(getattr(self.config.app, "state", None), "agents", None)
        try:
            if agents is not None:
                agents.stop()
        except Exception:  # the stop goes on: what is in flight still ends
            logging.getLogger("reactor").exception("Telling agents and pages of the stop failed")
        await super().shutdown(sockets)


def graceful(app: Any, **config: Any) -> GracefulServer:
    """A GracefulServer for `app` (uvicorn.Config's options in `config`)."""
    # X-Forwarded-* count only from the proxies the app is told to trust, never by uvicorn's default
    return GracefulServer(
        uvicorn.Config(app, timeout_graceful_shutdown=GRACE_SECONDS, proxy_headers=False, **config)
    )
