"""The browser runtime this server hands the page: the Pyodide that `web/vendor.py` put in place,
its version stamp, and the memory snapshot made from it."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from .assets import SourceArchive
from .bytecode import compiled
from .files import ROOT, VENDOR, WEB, made_folder
from .snapshot import memory_snapshot
from .stdlib import COMPILED_STDLIB, REACTOR_AT_START, STDLIB_AFTER_BOOT, stdlib_sources

__all__ = ["ROOT", "VENDOR", "WEB", "Runtime", "runtime_manifest", "snapshot_url"]
# Pyodide's module the reactor worker imports (web/reactor-worker.js), and the one it imports first.
PYODIDE_MODULES = ["pyodide/pyodide.mjs", "pyodide/pyodide.asm.mjs"]
NOT_VENDORED = (
    "The browser runtime is not vendored: run `python web/vendor.py` (the README's set-up does)."
)


@dataclass(frozen=True)
class Runtime:
    """What `web/vendor.py` put in place: `ready` False (and `error` saying how to fix it) when
    nothing was; the page's files live under `/vendor/{stamp}/`."""

    ready: bool
    stamp: str
    python: str = ""
    pyodide: str = ""
    error: str = ""
    snapshot: str = ""  # the URL of Pyodide's memory snapshot, "" for none

    @property
    def interpreter(self) -> str:
        return f"/vendor/{self.stamp}/{PYODIDE_MODULES[0]}"

    @property
    def site(self) -> str:
        """Where the page's Python bundle is installed in Pyodide's file system."""
        return f"/lib/python{self.python}/site-packages"

    @property
    def made(self) -> Path:
        """Where what is made from this runtime (bytecode, snapshots) is kept (files.py)."""
        return made_folder(self.stamp)

    def with_snapshot(self, archive: SourceArchive, page_modules: list[str]) -> Runtime:
        """This runtime with its memory snapshot made (or found) and its URL set."""
        return dataclasses.replace(self, snapshot=snapshot_url(self, archive, page_modules))

    def for_page(self) -> dict[str, Any]:
        """What boot.json tells the page."""
        return {
            "interpreter": self.interpreter,
            "ready": self.ready,
            "error": self.error,
            "pyodide": self.pyodide,
            "snapshot": self.snapshot,
        }

    def archive_options(self) -> dict[str, Any]:
        """SourceArchive's options for the vendored Pyodide (none when it is not vendored): its
        bytecode, the runtime's Python the page imports after Pyodide's boot
        (stdlib.py), and where the bundle's zstd twin is kept."""
        if not self.ready:
            return {}
        return {
            "bytecode": partial(compiled, pyodide=VENDOR / "pyodide", cache=self.made / "bytecode"),
            "cache_tag": "cpython-" + self.python.replace(".", ""),
            "extra": stdlib_sources(VENDOR / "pyodide" / "python_stdlib.zip"),
            "path": [COMPILED_STDLIB],
            "cache": self.made / "bundle",
        }


def runtime_manifest() -> Runtime:
    """What `web/vendor.py` put in place; the page explains how to fix it when it is missing."""
    try:
        manifest = json.loads((VENDOR / "manifest.json").read_text())
        return Runtime(
            True, str(manifest["stamp"]), str(manifest["python"]), str(manifest.get("pyodide", ""))
        )
    except (OSError, ValueError, KeyError, TypeError):
        return Runtime(False, "none", error=NOT_VENDORED)


def snapshot_url(runtime: Runtime, archive: SourceArchive, page_modules: list[str]) -> str:
    """Where the page gets Pyodide's memory snapshot (snapshot.py), with `archive` installed
    and what the worker imports at its start imported: reactor, the plugins' `page_modules` (when
    they can be imported there), the stdlib they use. "" for none."""
    if not runtime.ready:
        return ""
    for plugins in (tuple(dict.fromkeys(page_modules)), ()) if page_modules else ((),):
        name = memory_snapshot(
            VENDOR / "pyodide",
            runtime.made / "snapshot",
            runtime.stamp,
            (*STDLIB_AFTER_BOOT, *REACTOR_AT_START, *plugins),
            bundle=archive.data,
            site=runtime.site,
        )
        if name:
            return f"/vendor/{runtime.stamp}/snapshot/{name}"
    return ""
