"""Where the page's files are: index.html, agent.json, web/ and its vendored runtime.

A checkout serves its own (an editable install, `./dev`); a wheel carries a copy in
`reactor/server/static/`, put there when the wheel is built (web/wheel.py), so `pip install reactor`
serves the page with no checkout and no download. What the server makes from the runtime (the
page's bytecode, Pyodide's memory snapshot) goes beside the checkout's runtime, or, for an
installed reactor, into the user's cache: site-packages may be read-only.
"""

from __future__ import annotations

import os
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[4]
STATIC = Path(__file__).resolve().parents[1] / "static"
INSTALLED = (STATIC / "index.html").is_file()
ROOT = STATIC if INSTALLED else CHECKOUT
WEB = ROOT / "web"
VENDOR = WEB / "vendor"


def made_folder(stamp: str) -> Path:
    """Where the server keeps what it makes from runtime `stamp` (`bytecode/`, `snapshot/`)."""
    if not INSTALLED:
        return VENDOR
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "reactor" / stamp
