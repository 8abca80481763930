"""Requests per minute and tokens per UTC day for each person, counted in the database so that
every server process on one PostgreSQL shares them."""

from __future__ import annotations

import time

from ...errors import ApiError
from ..database import Database
from .config import AssistantConfig

USAGE_TABLE = [
    "CREATE TABLE IF NOT EXISTS assistant_usage (who TEXT NOT NULL, period TEXT NOT NULL, "
    "requests INTEGER NOT NULL DEFAULT 0, tokens INTEGER NOT NULL DEFAULT 0, PRIMARY KEY "
    "(who, period))"
]
ALLOWANCE_USED = "You have used today's assistant allowance; it renews at 00:00 UTC."


class Refused(ApiError):
    """A request the gateway answers itself: the status, the person's sentence, its headers."""


class Allowance:
    """Requests per minute and tokens per UTC day, per user, in the shared database."""

    def __init__(self, database: Database, config: AssistantConfig) -> None:
        self.database, self.config = database, config
        database.migrate("assistant", USAGE_TABLE)

    def admit(self, who: str, now: float) -> None:
        """Count one request; Refused (429) when over either limit."""
        minute, day = _minute(now), _day(now)
        with self.database.transaction() as db:
            db.execute(
                "DELETE FROM assistant_usage WHERE who = ? AND period LIKE 'm:%' AND period < ?",
                (who, minute),
            )
            requests = db.execute(
                "INSERT INTO assistant_usage (who, period, requests) VALUES (?, ?, 1) ON "
                "CONFLICT (who, period) "
                "DO UPDATE SET requests = assistant_usage.requests + 1 RETURNING requests",
                (who, minute),
            ).fetchone()[0]
            row = db.execute(
                "SELECT tokens FROM assistant_usage WHERE who = ? AND period = ?", (who, day)
            ).fetchone()
        if row is not None and row[0] >= self.config.limit_tokens:
            raise Refused(429, ALLOWANCE_USED, retry_after=int(86_400 - now % 86_400) + 1)
        if requests > self.config.limit_rpm:
            wait = int(60 - now % 60) + 1
            raise Refused(
                429,
                f"You have sent {self.config.limit_rpm} messages to the assistant in the last "
                f"minute, its limit; wait {wait} seconds and send again.",
                retry_after=wait,
            )

    def spend(self, who: str, tokens: int, now: float) -> None:
        with self.database.transaction() as db:
            db.execute(
                "INSERT INTO assistant_usage (who, period, tokens) VALUES (?, ?, ?) ON CONFLICT "
                "(who, period) DO UPDATE SET tokens = assistant_usage.tokens + excluded.tokens",
                (who, _day(now), tokens),
            )


def _minute(now: float) -> str:
    return "m:" + time.strftime("%Y-%m-%dT%H:%M", time.gmtime(now))


def _day(now: float) -> str:
    return "d:" + time.strftime("%Y-%m-%d", time.gmtime(now))
