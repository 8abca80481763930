"""Requests per minute and tokens per UTC day for each person, counted in the database so that
every server process on one PostgreSQL shares them.

A request is charged its bound before it goes to the provider: its `max_tokens` and an estimate
of its input (`Reservation`), added to the day's tokens in the one statement that admits it, and
only while the day's tokens are under the limit. The answer then settles it (`settle`): to the
usage the provider reports for the whole answer, or, for an answer that did not end as answers
end (the person left, the stream was cut, no usage came), to the larger of the reservation and
what the provider reported so far (relay.py says why). So a person who closes the stream before
the provider's final usage event is still charged, and requests sent in parallel see each
other's reservations: together they end at most one request's bound past the limit, as long as
each answer stays within its bound (the provider stops at `max_tokens`; the input estimate is
generous, see `input_estimate`). A server that stops mid-answer leaves the reservation charged
for the day: never less than what the person could have used."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ...errors import ApiError
from ..database import Database
from .config import AssistantConfig

USAGE_TABLE = [
    "CREATE TABLE IF NOT EXISTS assistant_usage (who TEXT NOT NULL, period TEXT NOT NULL, "
    "requests INTEGER NOT NULL DEFAULT 0, tokens INTEGER NOT NULL DEFAULT 0, PRIMARY KEY "
    "(who, period))"
]
ALLOWANCE_USED = "You have used today's assistant allowance; it renews at 00:00 UTC."
BYTES_PER_TOKEN = 4  # English text as providers' tokenizers cut it; JSON's syntax adds more


@dataclass(frozen=True)
class Reservation:
    """The tokens charged to `who` on day `period` while a request is answered: its input
    estimate and its output bound (`max_tokens`)."""

    who: str
    period: str
    input: int
    output: int

    @property
    def tokens(self) -> int:
        return self.input + self.output


def input_estimate(body: bytes) -> int:
    """The input tokens of a request body as sent (JSON, non-ASCII escaped as `\\uXXXX`, so six
    bytes a character where a tokenizer takes one or two): its bytes over four, rounded up."""
    return -(-len(body) // BYTES_PER_TOKEN)


class Allowance:
    """Requests per minute and tokens per UTC day, per user, in the shared database."""

    def __init__(self, database: Database, config: AssistantConfig) -> None:
        self.database, self.config = database, config
        database.migrate("assistant", USAGE_TABLE)

    def admit(self, who: str, now: float, input: int, output: int) -> Reservation:
        """Count one request and charge its bound (`input` estimated, `output` its max_tokens)
        to today, in one transaction; ApiError (429) when over either limit, charging nothing."""
        minute, day = _minute(now), _day(now)
        reservation = Reservation(who, day, input, output)
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
            over_rpm = requests > self.config.limit_rpm
            if over_rpm:
                row = db.execute(
                    "SELECT tokens FROM assistant_usage WHERE who = ? AND period = ?", (who, day)
                ).fetchone()
                used_up = row is not None and row[0] >= self.config.limit_tokens
            else:
                # The bound is added by the statement that checks the limit: requests in
                # parallel, on any process, each see the others' reservations.
                used_up = (
                    db.execute(
                        "INSERT INTO assistant_usage (who, period, tokens) VALUES (?, ?, ?) ON "
                        "CONFLICT (who, period) DO UPDATE SET tokens = assistant_usage.tokens + "
                        "excluded.tokens WHERE assistant_usage.tokens < ? RETURNING tokens",
                        (who, day, reservation.tokens, self.config.limit_tokens),
                    ).fetchone()
                    is None
                )
        if used_up:
            raise ApiError(429, ALLOWANCE_USED, retry_after=int(86_400 - now % 86_400) + 1)
        if over_rpm:
            wait = int(60 - now % 60) + 1
            raise ApiError(
                429,
                f"You have sent {self.config.limit_rpm} messages to the assistant in the last "
                f"minute, its limit; wait {wait} seconds and send again.",
                retry_after=wait,
            )
        return reservation

    def settle(self, reservation: Reservation, tokens: int) -> None:
        """Replace the reservation by the tokens the answer is charged, on the day it was made."""
        if tokens == reservation.tokens:
            return
        with self.database.transaction() as db:
            db.execute(
                "UPDATE assistant_usage SET tokens = tokens + ? WHERE who = ? AND period = ?",
                (tokens - reservation.tokens, reservation.who, reservation.period),
            )


def _minute(now: float) -> str:
    return "m:" + time.strftime("%Y-%m-%dT%H:%M", time.gmtime(now))


def _day(now: float) -> str:
    return "d:" + time.strftime("%Y-%m-%d", time.gmtime(now))
