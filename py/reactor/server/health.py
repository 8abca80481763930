"""What a load balancer or an orchestrator polls: `GET /healthz`, the process answers; `GET
/readyz`, it can serve — its database answers a `SELECT 1` within READY_SECONDS and its runtime
runs (the page's runtime is made before the process listens; the app's lifespan has started
/mcp's sessions and, on PostgreSQL, the page bus). Neither needs a sign-in nor says anything
secret, and both are cheap: /healthz touches nothing, and /readyz runs one ping at a time however
often it is asked (a caller arriving during a ping waits for that one)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import DatabaseError
from .api import DOWN_RETRY_SECONDS, ERROR, NO_STORE, RETRY_AFTER, Call, Reply, declare, routes_of
from .database import Database

PATHS = ("/healthz", "/readyz")  # they read nothing per request (no plugin switches)
READY_SECONDS = 2.0
OK = "ok"
CHECKS = {
    "type": "object",
    "required": ["database", "runtime"],
    "properties": {
        "database": {"type": "string", "description": '"ok", or what is wrong, as a sentence.'},
        "runtime": {"type": "string", "description": '"ok", or what is wrong, as a sentence.'},
    },
}
HEALTHY = {"type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}}
READY = {
    "type": "object",
    "required": ["status", "checks"],
    "properties": {"status": {"const": "ready"}, "checks": CHECKS},
}
NOT_READY = {
    "type": "object",
    "required": ["status", "error", "checks"],
    "properties": {
        "status": {"const": "not ready"},
        "error": ERROR["properties"]["error"],
        "checks": CHECKS,
    },
}


class Readiness:
    """The checks /readyz runs. `running` says whether the app's lifespan has started."""

    def __init__(self, database: Database, running: Callable[[], bool]) -> None:
        self.database, self.running = database, running
        self.ping: asyncio.Future[None] | None = None

    async def database_check(self) -> str:
        ping = self.ping
        if ping is None or ping.done() or ping.get_loop() is not asyncio.get_running_loop():
            ping = self.ping = asyncio.ensure_future(run_in_threadpool(self.database.ping))
            # read by whoever waits; this keeps a failure nobody waited for out of the log
            ping.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            await asyncio.wait_for(asyncio.shield(ping), READY_SECONDS)
        except TimeoutError:
            return f"The database did not answer within {READY_SECONDS:g} seconds."
        except DatabaseError:
            return "The database is not answering."
        return OK

    def runtime_check(self) -> str:
        if self.running():
            return OK
        return "The server has not started its runtime (its lifespan): /mcp is not running."

    async def answer(self) -> Response:
        checks = {"database": await self.database_check(), "runtime": self.runtime_check()}
        wrong = [sentence for sentence in checks.values() if sentence != OK]
        if not wrong:
            return JSONResponse(
                {"status": "ready", "checks": checks}, headers={"cache-control": "no-store"}
            )
        return JSONResponse(
            {"status": "not ready", "error": " ".join(wrong), "checks": checks},
            503,
            headers={"cache-control": "no-store", "retry-after": str(DOWN_RETRY_SECONDS)},
        )


@dataclass(frozen=True)
class HealthServices:
    """What the handlers work with, one set per app: they take it from the call
    (`call.services`, routes_of)."""

    readiness: Readiness


def health_routes(readiness: Readiness) -> list[Route]:
    return routes_of(healthz, readyz, services=HealthServices(readiness))


@declare(
    "GET",
    "/healthz",
    "Whether this server process answers (a liveness probe); it reads nothing",
    replies={200: Reply(HEALTHY, headers=NO_STORE)},
)
async def healthz(call: Call) -> Any:
    return JSONResponse({"status": "ok"}, headers={"cache-control": "no-store"})


@declare(
    "GET",
    "/readyz",
    "Whether this server process can serve (a readiness probe): its database answers and "
    "its runtime runs",
    replies={
        200: Reply(READY, headers=NO_STORE),
        503: Reply(NOT_READY, headers={**NO_STORE, **RETRY_AFTER}),
    },
)
async def readyz(call: Call) -> Response:
    services: HealthServices = call.services
    return await services.readiness.answer()
