"""Pyodide's memory snapshot for the page: its Python initialised once, here, not at every visit.

Why: initialising Python in WebAssembly is most of a page's boot (about 4 of 5.5 s on this
machine); restoring memory that holds an initialised Python takes about 1.5 s (bench/RESULTS.md).
Pyodide makes it (`web/snapshot.mjs`, under the Node the set-up already needs) with the stdlib
modules the page imports after its boot already imported. One per vendored runtime and module
list, cached and served beside the runtime; without Node, or when making it fails, the page
boots Pyodide from its files as before.

A snapshot fixes what Python drew at its start for every page that restores it: the page
reseeds `random` (reactor.browser.restored) and its str hash key is this server's, not its own.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger("reactor.server")
MAKER = Path(__file__).resolve().parents[3] / "web" / "snapshot.mjs"


def memory_snapshot(pyodide: Path, folder: Path, stamp: str, modules: tuple[str, ...], *, node: str = "node") -> str | None:
    """The name, in `folder`, of the snapshot of the Pyodide in `pyodide` (runtime `stamp`) with
    `modules` imported: made now unless made before. None when it cannot be made."""
    key = hashlib.sha256("\n".join([stamp, *modules, MAKER.read_text()]).encode()).hexdigest()[:16]
    name = f"snapshot-{key}.bin"
    if (folder / name).is_file() and (folder / f"{name}.gz").is_file():
        return name
    if shutil.which(node) is None:
        log.warning("Node is not on PATH: the page will boot Pyodide without a memory snapshot (slower start-up).")
        return None
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as work:
        made = Path(work) / name
        try:
            subprocess.run(
                [node, str(MAKER), str(pyodide), str(made), *modules], capture_output=True, text=True, timeout=300, check=True
            )
            data = made.read_bytes()
        except (subprocess.SubprocessError, OSError) as error:
            detail = getattr(error, "stderr", "") or ""
            log.warning("Pyodide's memory snapshot could not be made; the page boots without it: %s %s", error, detail[-500:])
            return None
        # The twin first: a snapshot is served only once both are whole (two servers may start at once).
        (Path(work) / f"{name}.gz").write_bytes(gzip.compress(data, 6, mtime=0))
        os.replace(Path(work) / f"{name}.gz", folder / f"{name}.gz")
        os.replace(made, folder / name)
    return name
