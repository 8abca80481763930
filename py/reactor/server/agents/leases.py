"""Rate leases: a server process on PostgreSQL counts an agent's requests against its credential's
shared rate window without writing the window on every request.

A credential (an agent token, an OAuth grant) is held to RATE_LIMIT requests per RATE_WINDOW
seconds on all processes together; its row holds the window (when it began, the requests in it),
moved by the one statement that also checks the credential. That statement is a write, and a
write per request cost PostgreSQL more than all the rest of an agent's call (bench/proxy.py: 0.25
of 0.45 ms of the database's CPU a call). So the statement counts a lease of several requests at
once, and the process serves the next ones from memory while the lease lasts:

- never past the limit: a lease is counted in the window before any of it is used, and one that
  reaches past the limit grants only what is left of it;
- a lease is twice what the last one served (1 at first), at most MAX_LEASE and a quarter of what
  the window has left; what a lease did not serve goes back to the window with the next statement
  (`back`), so a steady agent is counted as it calls, and near the limit each request is counted
  alone: another process's lease refuses a request at most a few before the limit;
- it lasts LEASE_SECONDS at most, and ends with its window: a revoked credential's leases are
  dropped on every process as soon as the bus tells it (`forget`: Agents.revoke); a process that
  missed the message refuses the credential within LEASE_SECONDS, and a change of its person's
  groups reaches their agent's calls within that time too.

Every step runs on the event loop's thread (the credential's check is synchronous there).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

H = TypeVar("H")  # what a credential stands for

LEASE_SECONDS = 1.0
MAX_LEASE = 16
MAX_HELD = 10_000  # credentials a process keeps leases of; past it, the ended ones are dropped


@dataclass
class Lease(Generic[H]):
    holder: H  # what the credential stands for, handed to each request the lease serves
    ident: str  # the credential's id: what `forget` names
    window: float  # the window it was counted in (its start)
    left: int
    cap: int  # the most the next lease may take: a quarter of what the window had left
    ends: float  # time.monotonic()
    used: int = 1  # the request that took it


@dataclass(frozen=True)
class Count:
    """What the next statement counts for a credential: `take` requests (this one first), less
    `back` that an ended lease of `window` did not serve."""

    take: int
    back: int = 0
    window: float | None = None

    def params(self, digest: str, now: float, seconds: float) -> dict[str, Any]:
        """The check-and-count statement's parameters for the credential `digest` at `now`, its
        window `seconds` long: :now, :since, :hash, :take, :back, :window."""
        return {
            "now": now,
            "since": now - seconds,
            "hash": digest,
            "take": self.take,
            "back": self.back,
            "window": self.window,
        }


class Leases(Generic[H]):
    """The leases this process holds, by the credential's digest."""

    def __init__(self) -> None:
        self.held: dict[str, Lease[H]] = {}

    def use(self, key: str) -> H | None:
        """The holder of the credential's live lease, this request served from it; None when
        the request must be counted by a statement."""
        lease = self.held.get(key)
        if lease is None or lease.left <= 0 or time.monotonic() >= lease.ends:
            return None
        lease.left -= 1
        lease.used += 1
        return lease.holder

    def count(self, key: str) -> Count:
        """What the statement about to check the credential counts; its lease has ended."""
        lease = self.held.pop(key, None)
        if lease is None:
            return Count(1)
        return Count(max(1, min(MAX_LEASE, lease.cap, lease.used * 2)), lease.left, lease.window)

    def hold(
        self,
        key: str,
        ident: str,
        holder: H,
        counted: Count,
        window: float,
        total: int,
        limit: int,
        ends_in: float,
    ) -> bool:
        """The statement counted `counted.take` (less `counted.back`), leaving the window that
        began at `window` at `total` of `limit` requests and ending in `ends_in` seconds.
        Whether this request is within the limit; what else the lease granted is served from
        memory."""
        granted = min(counted.take, limit - (total - counted.take))
        if granted <= 0:
            return False
        if len(self.held) >= MAX_HELD:
            self._sweep()
        ends = time.monotonic() + min(LEASE_SECONDS, ends_in)
        cap = max(1, (limit - total) // 4)
        self.held[key] = Lease(holder, ident, window, granted - 1, cap, ends)
        return True

    def forget(self, ident: str) -> None:
        """The credential was revoked: no request is served from its leases any more."""
        for key, lease in list(self.held.items()):
            if lease.ident == ident:
                del self.held[key]

    def _sweep(self) -> None:
        now = time.monotonic()
        for key, lease in list(self.held.items()):
            if now >= lease.ends:
                del self.held[key]
