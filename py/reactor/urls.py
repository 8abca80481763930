"""URL pieces for plugins' page code, without `urllib.parse`.

Why: in the page, Pyodide compiles `urllib.parse` from source on import, about 0.15 s of the
start-up (bench/RESULTS.md), for three one-line needs.
"""

from __future__ import annotations

from typing import Any

from .errors import DeclarationError

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def slugify(text: str, *, limit: int, fallback: str) -> str:
    """A URL-safe id from a title: 'Q3 Révision!' -> 'q3-revision' (at most `limit` characters;
    `fallback` when nothing is left)."""
    import re
    import unicodedata

    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:limit].strip("-") or fallback


def quote_segment(text: str) -> str:
    """`text` as one path segment or query value: every byte but the unreserved ones %-encoded."""
    return "".join(chr(byte) if byte in _UNRESERVED else f"%{byte:02X}" for byte in text.encode())


def query_string(params: dict[str, Any]) -> str:
    """`{"a": "x y"}` as `a=x%20y`."""
    return "&".join(
        f"{quote_segment(str(key))}={quote_segment(str(value))}" for key, value in params.items()
    )


def on_origin_of(base: str, path: str) -> str:
    """The absolute `path` ("/x") on the origin of `base`; unchanged when `base` is relative
    or `path` is already a full http(s) URL."""
    if path.startswith(("http://", "https://")):
        return path
    if not path.startswith("/") or path.startswith("//"):
        rule = f"{path!r} is not an absolute path"
        raise DeclarationError(rule, owner="on_origin_of", field="path", value=path)
    start = base.find("://")
    if start < 0:
        return path
    end = base.find("/", start + 3)
    return (base if end < 0 else base[:end]) + path
