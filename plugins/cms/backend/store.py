"""Sites, roles and entries in the server's SQLite file. No access checks here: `access.py`
decides who may call; this module only reads and writes, each call one transaction."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from reactor.errors import DatabaseBusy, ReactorError, UniqueViolation
from reactor.server.database import Database
from reactor.server.requests import StaleVersion

from .entry import free_slug, slugify

SCHEMA = """
CREATE TABLE IF NOT EXISTS cms_sites (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cms_roles (
    site TEXT NOT NULL REFERENCES cms_sites(id) ON DELETE CASCADE,
    username TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('viewer', 'editor', 'publisher')),
    PRIMARY KEY (site, username)
);
CREATE TABLE IF NOT EXISTS cms_entries (
    site TEXT NOT NULL REFERENCES cms_sites(id) ON DELETE CASCADE,
    slug TEXT NOT NULL,
    collection TEXT NOT NULL CHECK (collection IN ('pages', 'posts')),
    status TEXT NOT NULL CHECK (status IN ('draft', 'published')),
    title TEXT NOT NULL,
    excerpt TEXT NOT NULL DEFAULT '',
    body TEXT NOT NULL DEFAULT '',
    source_url TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    published_at TEXT,
    PRIMARY KEY (site, slug)
);
"""
MAX_SLUG_TRIES = 200  # each failed try means another call made an entry of this title meanwhile
SUMMARY = (
    "site, slug, collection, status, title, excerpt, source_url, created_at, updated_at, "
    "published_at, version"
)
# Every change adds one to an entry's version; a change that names the version it read is refused
# (StaleEntry, 409) when another came first.
VERSIONED = "ALTER TABLE cms_entries ADD COLUMN version INTEGER NOT NULL DEFAULT 1"


class SlugTaken(ReactorError, ValueError):
    """The slug the caller chose is used on the site already (409)."""


class StaleEntry(StaleVersion):
    """A change named a version the entry no longer has (409); `current` is the entry now."""

    def __init__(self, current: dict[str, Any]) -> None:
        super().__init__(
            f"The entry {current['slug']!r} was changed by someone else since the version "
            "you read; it is now version "
            f"{current['version']}. Read it again and make the change on the current entry.",
            current["version"],
            current,
        )


class SiteStore:
    """The CMS tables; entries come back as plain dicts with their public `url` when published."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.migrate("cms", [SCHEMA, VERSIONED])

    # Sites and roles ---------------------------------------------------------------------

    def add_site(self, id: str, title: str) -> None:
        with self.database.transaction() as db:
            db.execute(
                "INSERT INTO cms_sites (id, title) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
                (id, title),
            )

    def set_role(self, site: str, username: str, role: str | None) -> None:
        """Give `username` a role on `site`; None takes every role away."""
        with self.database.transaction() as db:
            db.execute("DELETE FROM cms_roles WHERE site = ? AND username = ?", (site, username))
            if role is not None:
                db.execute(
                    "INSERT INTO cms_roles (site, username, role) VALUES (?, ?, ?)",
                    (site, username, role),
                )

    def role_of(self, site: str, username: str) -> str | None:
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT role FROM cms_roles WHERE site = ? AND username = ?", (site, username)
            ).fetchone()
        return None if row is None else row["role"]

    def sites_of(self, username: str) -> list[dict[str, str]]:
        with self.database.transaction() as db:
            rows = db.execute(
                "SELECT cms_sites.id, cms_sites.title, cms_roles.role FROM cms_roles "
                "JOIN cms_sites ON cms_sites.id = cms_roles.site WHERE username = ? ORDER BY "
                "cms_sites.id",
                (username,),
            ).fetchall()
        return [{"id": r["id"], "title": r["title"], "role": r["role"]} for r in rows]

    def site_title(self, site: str) -> str | None:
        with self.database.transaction() as db:
            row = db.execute("SELECT title FROM cms_sites WHERE id = ?", (site,)).fetchone()
        return None if row is None else row["title"]

    def is_empty(self) -> bool:
        with self.database.transaction() as db:
            return db.execute("SELECT 1 FROM cms_sites LIMIT 1").fetchone() is None

    # Entries -----------------------------------------------------------------------------

    def list_entries(
        self, site: str, *, collection: str | None = None, status: str | None = None
    ) -> list[dict[str, Any]]:
        """Summaries (no body), newest change first."""
        query, params = f"SELECT {SUMMARY} FROM cms_entries WHERE site = ?", [site]
        if collection:
            query, params = query + " AND collection = ?", [*params, collection]
        if status:
            query, params = query + " AND status = ?", [*params, status]
        with self.database.transaction() as db:
            rows = db.execute(query + " ORDER BY updated_at DESC, slug", params).fetchall()
        return [_entry(row) for row in rows]

    def get_entry(self, site: str, slug: str) -> dict[str, Any] | None:
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT * FROM cms_entries WHERE site = ? AND slug = ?", (site, slug)
            ).fetchone()
        return None if row is None else _entry(row)

    def has_source(self, site: str, source_url: str) -> str | None:
        """The slug of the entry imported from `source_url`, if any: imports are not repeated."""
        with self.database.transaction() as db:
            row = db.execute(
                "SELECT slug FROM cms_entries WHERE site = ? AND source_url = ? AND "
                "source_url != ''",
                (site, source_url),
            ).fetchone()
        return None if row is None else row["slug"]

    def create_entry(
        self,
        site: str,
        fields: dict[str, Any],
        *,
        published: bool = False,
        suggested_slug: str = "",
    ) -> dict[str, Any]:
        """Insert an entry. A slug in `fields` is the caller's choice: SlugTaken when it is used.
        Without one, the slug comes from `suggested_slug` or the title, and the next free one is
        taken when it is used. The primary key settles races: reading the free slugs and then
        inserting let 100 parallel posts of one title pick the same slug (41 answered 500)."""
        chosen = fields.get("slug")
        base = chosen or suggested_slug or slugify(fields["title"])
        now = _now()
        row = (
            fields.get("collection", "posts"),
            "published" if published else "draft",
            fields["title"],
            fields.get("excerpt", ""),
            fields.get("body", ""),
            fields.get("source_url", ""),
            now,
            now,
            now if published else None,
        )
        for _ in range(MAX_SLUG_TRIES):
            slug = chosen or self._free_slug(site, base)
            try:
                with self.database.transaction() as db:
                    db.execute(
                        "INSERT INTO cms_entries (site, slug, collection, status, title, "
                        "excerpt, body, source_url, created_at, updated_at, published_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (site, slug, *row),
                    )
            except UniqueViolation:
                if chosen:
                    raise SlugTaken(
                        f"The slug {slug!r} is already used on site {site!r}; choose another "
                        "or update that entry."
                    ) from None
                continue  # another call took this slug since we looked: look again
            return self.get_entry(site, slug)  # type: ignore[return-value]
        # Answered as a busy database (503): so many calls made this slug at once that this one
        # never got a turn.
        raise DatabaseBusy(
            f"database is busy: {MAX_SLUG_TRIES} tries at a slug like {base!r} all lost"
        )

    def _free_slug(self, site: str, base: str) -> str:
        with self.database.transaction() as db:
            rows = db.execute(
                "SELECT slug FROM cms_entries WHERE site = ? AND (slug = ? OR slug LIKE ?)",
                (site, base, f"{base}-%"),
            )
            return free_slug(base, {r["slug"] for r in rows})

    def update_entry(
        self, site: str, slug: str, changes: dict[str, Any], *, version: int | None = None
    ) -> dict[str, Any]:
        """Change fields; with `version` (the one the caller read), StaleEntry when it is not the
        current."""
        columns = [
            key
            for key in ("collection", "title", "excerpt", "body", "source_url")
            if key in changes
        ]
        with self.database.transaction(immediate=True) as db:
            if version is not None:
                row = db.execute(
                    "SELECT * FROM cms_entries WHERE site = ? AND slug = ?", (site, slug)
                ).fetchone()
                if row is not None and row["version"] != version:
                    raise StaleEntry(_entry(row))
            db.execute(
                "UPDATE cms_entries SET "
                f"{', '.join(f'{c} = ?' for c in columns + ['updated_at'])}, version = "
                "version + 1 WHERE site = ? AND slug = ?",
                (*[changes[c] for c in columns], _now(), site, slug),
            )
        return self.get_entry(site, slug)  # type: ignore[return-value]

    def set_status(self, site: str, slug: str, status: str) -> dict[str, Any]:
        now = _now()
        with self.database.transaction() as db:
            db.execute(
                "UPDATE cms_entries SET status = ?, updated_at = ?, published_at = ?, "
                "version = version + 1 WHERE site = ? AND slug = ?",
                (status, now, now if status == "published" else None, site, slug),
            )
        return self.get_entry(site, slug)  # type: ignore[return-value]

    def delete_entry(self, site: str, slug: str) -> None:
        with self.database.transaction() as db:
            db.execute("DELETE FROM cms_entries WHERE site = ? AND slug = ?", (site, slug))


def public_path(site: str, slug: str) -> str:
    """Where a published entry is rendered (`public.py` serves it)."""
    return f"/sites/{site}/{slug}"


def _entry(row: Any) -> dict[str, Any]:
    entry = {key: row[key] for key in row.keys()}
    entry["url"] = (
        public_path(entry["site"], entry["slug"]) if entry["status"] == "published" else None
    )
    return entry


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
