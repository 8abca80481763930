"""Running one of Pyodide's build steps under Node, and keeping what it made.

The server has Pyodide itself compile the page's Python (bytecode.py) and write its memory
snapshot (snapshot.py): Pyodide runs under the Node the set-up needs to vendor it. Either step
is an optimisation; when Node is missing or the step fails, the log says so and the page does
the work itself, slower.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger("reactor.server")


def run_node(
    script: Path,
    *args: str,
    task: str,
    fallback: str,
    node: str = "node",
    input: str | None = None,
    timeout: float,
) -> str | None:
    """What `node script args` printed, or None when it could not run: the log then says which
    `task` was skipped and the `fallback` the page takes."""
    if shutil.which(node) is None:
        log.warning("Node is not on PATH, so %s is skipped: %s.", task, fallback)
        return None
    try:
        done = subprocess.run(
            [node, str(script), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
    except (subprocess.SubprocessError, OSError) as error:
        detail = getattr(error, "stderr", "") or ""
        log.warning(
            "%s failed: %s. %s %s", task[0].upper() + task[1:], fallback, error, detail[-500:]
        )
        return None
    return done.stdout


def store(path: Path, data: bytes) -> None:
    """Write `data` to `path` whole or not at all: two servers starting at once never read half a
    file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def least_recently_used(made: list[Path], kept: int) -> list[Path]:
    """Those of `made` beyond the `kept` most recently used (touched): what a cache lets go."""
    return sorted(made, key=lambda path: path.stat().st_mtime, reverse=True)[kept:]
