"""Failed sign-ins, limited per user name and per client address, in the database (so a restart
does not reset them, and several processes on one file share them).

An attempt is counted when it starts and forgotten when it succeeds, so a burst of guesses sent
at once is limited as well as one sent in turn. The client's address is the connection's, or
the one a proxy named by `--trust-proxy` forwards (server/proxies.py); behind a proxy not named,
every client has the proxy's address, and the per-client limit applies to all of them together.
"""

from __future__ import annotations

import math
import time

from ..database import Database

WINDOW_SECONDS = 15 * 60
USER_LIMIT = 10
CLIENT_LIMIT = 30
STEPS = [
    """
    CREATE TABLE IF NOT EXISTS sign_in_attempts (key TEXT NOT NULL, at REAL NOT NULL);
    CREATE INDEX IF NOT EXISTS sign_in_attempts_by_key ON sign_in_attempts (key, at);
    """,
]


class SignInLimits:
    """`admit` before checking a password, `succeeded` after a right one."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.migrate("sign_in_limits", STEPS)

    def admit(self, username: str, client: str) -> tuple[int, float]:
        """(0, ticket) with the attempt counted, or (seconds to wait before the next try, 0)."""
        now = time.time()
        keys = [(f"user:{username}", USER_LIMIT), (f"client:{client}", CLIENT_LIMIT)]
        with self.database.transaction(immediate=True) as db:
            db.execute("DELETE FROM sign_in_attempts WHERE at < ?", (now - WINDOW_SECONDS,))
            for key, limit in keys:
                recent = db.execute(
                    "SELECT at FROM sign_in_attempts WHERE key = ? ORDER BY at DESC LIMIT 1 "
                    "OFFSET ?",
                    (key, limit - 1),
                ).fetchone()
                if recent is not None:
                    return max(1, math.ceil(recent["at"] + WINDOW_SECONDS - now)), 0.0
            db.executemany(
                "INSERT INTO sign_in_attempts (key, at) VALUES (?, ?)",
                [(key, now) for key, _ in keys],
            )
        return 0, now

    def succeeded(self, username: str, client: str, ticket: float) -> None:
        """A right password forgets that user's failures, and this one attempt of the client's
        (the client's earlier failures stay: one account is no key to the others)."""
        with self.database.transaction() as db:
            db.execute("DELETE FROM sign_in_attempts WHERE key = ?", (f"user:{username}",))
            # The ticket is the attempt's own time (to the microsecond): it names that one row.
            db.execute(
                "DELETE FROM sign_in_attempts WHERE key = ? AND at = ?",
                (f"client:{client}", ticket),
            )
