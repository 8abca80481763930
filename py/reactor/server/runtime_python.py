"""Python the page imports at start-up that is not ours, so that it too arrives compiled.

Pyodide's stdlib zip holds sources only, and PyScript writes its `pyscript` package into Pyodide's
file system from JavaScript as sources too: the page compiled both in WebAssembly after Pyodide
was ready (~0.1 s on the bench, `html.entities` alone ~50 ms). The server ships their pycs in the
page's bundle (`SourceArchive`): checked-hash pycs beside where PyScript writes its sources, and the
stdlib packages imported after Pyodide's own boot as sources with pycs in a folder put ahead of the
zip on `sys.path`. A pyc that does not match its source is ignored by Python, so a PyScript whose
sources changed costs time, never correctness.
"""

from __future__ import annotations

import json
import logging
import re
import zipfile
from pathlib import Path

log = logging.getLogger("reactor.server")

PYSCRIPT_HOME = "/home/pyodide"  # Pyodide's working directory, where PyScript writes `pyscript/`
# Imported after Pyodide's boot (tests check): html by PyScript's set-up, difflib by the first
# unknown command or tool (its "Did you mean").
STDLIB_AFTER_BOOT = ("html", "difflib")
COMPILED_STDLIB = "/lib/compiled-stdlib"

_PYSCRIPT_PACKAGE = "{pyscript:{"  # how PyScript 0.7's core chunk writes the package: {pyscript:{"a.py":"…",…}}
_PYSCRIPT_FILE = re.compile(r'"(\w+\.py)":"((?:[^"\\]|\\.)*)"([,}])')


def pyscript_sources(pyscript: Path) -> dict[str, bytes]:
    """The `pyscript` package PyScript's core writes at boot, by the path it writes it to; empty
    (with a warning) when this PyScript's bundle does not hold it the way 0.7 does."""
    for chunk in sorted(pyscript.glob("core-*.js")):
        text = chunk.read_text()
        start = text.find(_PYSCRIPT_PACKAGE)
        if start < 0:
            continue
        files: dict[str, bytes] = {}
        position = start + len(_PYSCRIPT_PACKAGE)
        while match := _PYSCRIPT_FILE.match(text, position):
            try:
                files[f"{PYSCRIPT_HOME}/pyscript/{match[1]}"] = json.loads(f'"{match[2]}"').encode()
            except ValueError:
                break
            position = match.end()
            if match[3] == "}":
                return files
    log.warning("PyScript's own Python was not found in %s: the page will compile it itself.", pyscript)
    return {}


def stdlib_sources(stdlib_zip: Path, packages: tuple[str, ...] = STDLIB_AFTER_BOOT) -> dict[str, bytes]:
    """Each of `packages`' files from Pyodide's stdlib zip, by its path under COMPILED_STDLIB."""
    with zipfile.ZipFile(stdlib_zip) as archive:
        return {f"{COMPILED_STDLIB}/{name}": archive.read(name) for name in archive.namelist()
                if name.split("/")[0].removesuffix(".py") in packages and name.endswith(".py")}
