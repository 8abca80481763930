"""A signed-in person's conversations (threads), kept in the server's database.

A thread holds what the model saw (the provider-neutral messages of reactor.host.model) and what
the person saw (the chat's items: messages, tool cards with their outcome, approvals with their
decision and time), each appended as the conversation goes, never rewritten. Each append names
the version it follows: a page that missed another tab's append is refused (409) instead of
interleaving two conversations. A turn that starts while another tab's answer is still coming
is refused too, until that tab finishes or its answer is older than `answering_seconds`.

Every append is one transaction: the thread's row is moved by one conditional UPDATE (version,
size, who is answering), then the turn is inserted; a refusal writes nothing. The turns are kept
as the JSON text they arrived as, so a thread is read back by joining texts, not by decoding
and encoding every message.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

from ...errors import ApiError
from ...host.threads import first_words
from ..database import Database
from ..requests import StaleVersion

STEPS = [
    """
    CREATE TABLE IF NOT EXISTS threads (
        id TEXT PRIMARY KEY,
        username TEXT NOT NULL REFERENCES users(username) ON DELETE CASCADE,
        title TEXT NOT NULL,
        created REAL NOT NULL,
        updated REAL NOT NULL,
        version INTEGER NOT NULL,
        size INTEGER NOT NULL,
        messages INTEGER NOT NULL,
        answering_tab TEXT NOT NULL DEFAULT '',
        answering_at REAL NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS threads_by_user ON threads (username, updated DESC, id DESC);
    CREATE INDEX IF NOT EXISTS threads_by_age ON threads (updated);
    CREATE TABLE IF NOT EXISTS thread_turns (
        thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
        number INTEGER NOT NULL,
        messages TEXT NOT NULL,
        items TEXT NOT NULL,
        PRIMARY KEY (thread_id, number)
    );
    """,
]
ID_PATTERN = r"^[A-Za-z0-9_-]{22}$"
CURSOR = re.compile(r"^([0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?)~([A-Za-z0-9_-]{22})$")
APPEND = """
UPDATE threads SET
    version = version + 1,
    updated = :now,
    size = size + :size,
    messages = messages + :count,
    answering_tab = CASE WHEN :answering = 1 THEN :tab ELSE '' END,
    answering_at = :now
WHERE id = :id AND username = :user AND version = :version AND size + :size <= :most
    AND (:start = 0 OR answering_tab = '' OR answering_tab = :tab OR answering_at < :stale)
RETURNING version, updated
"""
SUMMARY = "id, title, created, updated, version, size, messages, answering_tab, answering_at"


@dataclass(frozen=True)
class ThreadLimits:
    """What the server keeps, as it tells the page: threads per person, bytes per thread and per
    append; `keep_days` deletes the threads no one added to for that many days (None: keep)."""

    threads: int = 200
    thread_bytes: int = 4_000_000
    turn_bytes: int = 1_000_000
    keep_days: float | None = None
    answering_seconds: float = 120.0

    def described(self) -> dict[str, Any]:
        return {
            "threads": self.threads,
            "threadBytes": self.thread_bytes,
            "turnBytes": self.turn_bytes,
            "keepDays": self.keep_days,
        }


def megabytes(size: int) -> str:
    return f"{size / 1_000_000:g} MB"


class ThreadStore:
    """The threads and thread_turns tables, one person's at a time."""

    def __init__(self, database: Database, limits: ThreadLimits | None = None) -> None:
        self.database, self.limits = database, limits or ThreadLimits()
        database.migrate("threads", STEPS)

    # -- writing ---------------------------------------------------------------------------

    def create(
        self,
        username: str,
        *,
        tab: str,
        messages: list[dict[str, Any]],
        items: list[dict[str, Any]],
        answering: bool,
        title: str = "",
    ) -> dict[str, Any]:
        """A new thread holding its first turn; 409 when the person has the most threads."""
        limits = self.limits
        messages_text, items_text = _text(messages), _text(items)
        size = _size(messages_text, items_text)
        self._fits(size, 0)
        thread_id, now = secrets.token_urlsafe(16), time.time()
        title = title.strip() or first_words(messages)
        with self.database.transaction(immediate=True) as db:
            count = db.execute(
                "SELECT COUNT(*) FROM threads WHERE username = ?", (username,)
            ).fetchone()[0]
            if count >= limits.threads:
                raise ApiError(409, too_many(limits.threads), limit="threads")
            db.execute(
                "INSERT INTO threads (id, username, title, created, updated, version, size, "
                "messages, answering_tab, answering_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?)",
                (
                    thread_id,
                    username,
                    title,
                    now,
                    now,
                    size,
                    len(messages),
                    tab if answering else "",
                    now,
                ),
            )
            db.execute(
                "INSERT INTO thread_turns (thread_id, number, messages, items) VALUES (?, 1, ?, ?)",
                (thread_id, messages_text, items_text),
            )
        return {
            "id": thread_id,
            "title": title,
            "created": now,
            "updated": now,
            "version": 1,
            "size": size,
            "messages": len(messages),
            "answering": answering,
        }

    def append(
        self,
        username: str,
        thread_id: str,
        *,
        version: int,
        tab: str,
        messages: list[dict[str, Any]],
        items: list[dict[str, Any]],
        answering: bool,
        start: bool,
    ) -> dict[str, Any]:
        """Add a turn (or a piece of one) after `version`; the new version. Refused, with nothing
        written: 404 not the person's, 409 a stale version, an answer coming in another tab, or
        the thread full."""
        messages_text, items_text = _text(messages), _text(items)
        size = _size(messages_text, items_text)
        self._fits(size, 0)
        now = time.time()
        with self.database.transaction() as db:
            row = db.execute(
                APPEND,
                {
                    "now": now,
                    "size": size,
                    "count": len(messages),
                    "answering": int(answering),
                    "tab": tab,
                    "id": thread_id,
                    "user": username,
                    "version": version,
                    "most": self.limits.thread_bytes,
                    "start": int(start),
                    "stale": now - self.limits.answering_seconds,
                },
            ).fetchone()
            if row is None:
                self._refusal(db, username, thread_id, version, size, tab, start)
            db.execute(
                "INSERT INTO thread_turns (thread_id, number, messages, items) VALUES (?, ?, ?, ?)",
                (thread_id, row["version"], messages_text, items_text),
            )
        return {"version": row["version"], "updated": row["updated"]}

    def rename(self, username: str, thread_id: str, title: str) -> dict[str, Any]:
        with self.database.transaction() as db:
            changed = db.execute(
                "UPDATE threads SET title = ? WHERE id = ? AND username = ?",
                (title, thread_id, username),
            ).rowcount
        if not changed:
            raise not_found(thread_id)
        return self.summary(username, thread_id)

    def delete(self, username: str, thread_id: str) -> None:
        with self.database.transaction() as db:
            gone = db.execute(
                "DELETE FROM threads WHERE id = ? AND username = ?", (thread_id, username)
            ).rowcount
        if not gone:
            raise not_found(thread_id)

    def purge(self, now: float | None = None) -> int:
        """Delete the threads nobody added to for `keep_days`; how many went."""
        if self.limits.keep_days is None:
            return 0
        before = (time.time() if now is None else now) - self.limits.keep_days * 86400
        with self.database.transaction() as db:
            return int(db.execute("DELETE FROM threads WHERE updated < ?", (before,)).rowcount)

    # -- reading ---------------------------------------------------------------------------

    def summary(self, username: str, thread_id: str) -> dict[str, Any]:
        with self.database.transaction() as db:
            row = _own_row(db, username, thread_id)
        return self._described(row)

    def read(self, username: str, thread_id: str) -> str:
        """The whole thread as JSON text: its summary, `messages`, `items` and `answering`
        ({tab, since, stale} of the tab whose answer was coming, or null)."""
        with self.database.transaction() as db:
            row = _own_row(db, username, thread_id)
            turns = db.execute(
                "SELECT messages, items FROM thread_turns WHERE thread_id = ? ORDER BY number",
                (thread_id,),
            ).fetchall()
        described = self._described(row)
        described["answering"] = (
            {
                "tab": row["answering_tab"],
                "since": row["answering_at"],
                "stale": not described["answering"],
            }
            if row["answering_tab"]
            else None
        )
        head = json.dumps(described)[:-1]
        return (
            f'{head}, "messages": {_joined(t[0] for t in turns)}, '
            f'"items": {_joined(t[1] for t in turns)}}}'
        )

    def listed(self, username: str, limit: int, before: str = "") -> dict[str, Any]:
        """The person's threads, the most recently added to first: `limit` of them, after the
        cursor `before`; `next` is the cursor of the page after, or None."""
        where, params = "username = ?", [username]  # type: str, list[Any]
        if before:
            found = CURSOR.match(before)
            if found is None:
                raise ApiError(
                    422, "The cursor 'before' is not one this server answered.", field="before"
                )
            updated, last = float(found.group(1)), found.group(2)
            where += " AND (updated < ? OR (updated = ? AND id < ?))"
            params += [updated, updated, last]
        with self.database.transaction() as db:
            rows = db.execute(
                f"SELECT {SUMMARY} FROM threads WHERE {where} ORDER BY updated DESC, id DESC "
                "LIMIT ?",
                (*params, limit + 1),
            ).fetchall()
            count = db.execute(
                "SELECT COUNT(*) FROM threads WHERE username = ?", (username,)
            ).fetchone()[0]
        threads = [self._described(row) for row in rows[:limit]]
        after = rows[limit - 1] if len(rows) > limit else None
        return {
            "threads": threads,
            "next": None if after is None else f"{after['updated']!r}~{after['id']}",
            "count": count,
            "limits": self.limits.described(),
        }

    # -- the refusals ----------------------------------------------------------------------

    def _fits(self, size: int, used: int) -> None:
        if used + size > self.limits.thread_bytes:
            raise ApiError(409, full(self.limits.thread_bytes), limit="threadBytes")

    def _refusal(
        self, db: Any, username: str, thread_id: str, version: int, size: int, tab: str, start: bool
    ) -> None:
        """Why the append was refused: not theirs, another tab answering, a stale version, or
        the thread full."""
        row = _own_row(db, username, thread_id)
        described = self._described(row)
        busy = ApiError(
            409,
            "The assistant is still answering in another tab or window; wait for it to finish, "
            "or stop it there, then send your message again.",
            answering=True,
            current=described,
        )
        if start and described["answering"] and row["answering_tab"] != tab:
            raise busy
        if row["version"] != version:
            raise StaleVersion(
                "This conversation changed in another tab or window; it is shown here as it is "
                "now. Send your message again.",
                row["version"],
                described,
            )
        if row["size"] + size > self.limits.thread_bytes:
            raise ApiError(409, full(self.limits.thread_bytes), limit="threadBytes")
        raise busy

    def _described(self, row: Any) -> dict[str, Any]:
        return {
            "id": row["id"],
            "title": row["title"],
            "created": row["created"],
            "updated": row["updated"],
            "version": row["version"],
            "size": row["size"],
            "messages": row["messages"],
            "answering": bool(row["answering_tab"])
            and row["answering_at"] >= time.time() - self.limits.answering_seconds,
        }


def _own_row(db: Any, username: str, thread_id: str) -> Any:
    """The summary row of the person's thread `thread_id`; not_found's 404 when there is none."""
    row = db.execute(
        f"SELECT {SUMMARY} FROM threads WHERE id = ? AND username = ?", (thread_id, username)
    ).fetchone()
    if row is None:
        raise not_found(thread_id)
    return row


def not_found(thread_id: str) -> ApiError:
    """The one answer for a thread that is not there and for another person's: the same words."""
    return ApiError(
        404,
        f"There is no conversation {thread_id[:40]!r} of yours here; it may have been deleted.",
        field="id",
    )


def too_many(most: int) -> str:
    kept = f"{most} conversation{'' if most == 1 else 's'}"
    return (
        f"You have {kept}, the most this site keeps for one person: delete old ones (under "
        "Conversations) to start a new one."
    )


def full(most: int) -> str:
    return (
        f"This conversation has reached this site's limit of {megabytes(most)}, so nothing more "
        "can be added to it: start a new conversation (this one stays as it is)."
    )


def _text(values: list[dict[str, Any]]) -> str:
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


def _size(*texts: str) -> int:
    return sum(len(text.encode("utf-8")) for text in texts)


def _joined(texts: Any) -> str:
    """JSON arrays' texts as one array's ("[1,2]", "[]", "[3]" -> "[1,2,3]")."""
    inner = [text[1:-1] for text in texts if text != "[]"]
    return "[" + ",".join(inner) + "]"
