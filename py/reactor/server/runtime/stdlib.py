"""Stdlib Python the page imports after Pyodide's boot, shipped compiled.

Pyodide's stdlib zip holds sources only: a module imported after the boot would be compiled in
WebAssembly, in the worker. The server ships those modules as sources with their pycs in a folder
put ahead of the zip on `sys.path` (`SourceArchive`); a pyc that does not match its source is
ignored by Python, so a changed stdlib costs time, never correctness.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

# The stdlib modules the page imports after Pyodide's boot, shipped compiled (tests check) and
# imported in its memory snapshot (snapshot.py): difflib, by the first unknown command or
# tool (its "Did you mean"); urllib.parse and ipaddress, by the chat's host.
STDLIB_AFTER_BOOT = ("difflib", "ipaddress", "urllib.parse")
COMPILED_STDLIB = "/lib/compiled-stdlib"
# reactor's modules the worker imports at its start, imported in the memory snapshot too
# (snapshot.py): a page restored from it imports none of them. With them, what the first calls
# after ready import: a tool call's envelope, and the chat's host, which the chat widget asks for
# as soon as the page is ready (imported then, it held the first tool call after ready: 1.2-3.7 s
# in WebKitGTK, whose WebAssembly is slow until warm; 0.2-0.5 s in Chromium).
REACTOR_AT_START = (
    "reactor.browser",
    "reactor.envelope",
    "reactor.facade",
    "reactor.host",
    "reactor.host.conversations",
    "reactor.on_demand",
    "reactor.page_plugins",
    "reactor.plugins",
)


def stdlib_sources(
    stdlib_zip: Path, modules: tuple[str, ...] = STDLIB_AFTER_BOOT
) -> dict[str, bytes]:
    """Each file of `modules`' top-level modules or packages from Pyodide's stdlib zip, by its
    path under COMPILED_STDLIB."""
    packages = {name.split(".")[0] for name in modules}
    with zipfile.ZipFile(stdlib_zip) as archive:
        return {
            f"{COMPILED_STDLIB}/{name}": archive.read(name)
            for name in archive.namelist()
            if name.split("/")[0].removesuffix(".py") in packages and name.endswith(".py")
        }
