"""What a wheel of reactor carries of the page: a setuptools `build_py` that copies index.html,
agent.json, web/'s scripts and styles and the vendored runtime into `reactor/server/static/`
(reactor/server/runtime/files.py serves them from there), so an installed reactor needs no checkout.

The runtime goes in whole, compressed twins included: the wheel is then ~14 MB, and a server
serves it at once, with no download, no compression at its first start and nothing written
beside site-packages. web/vendor.py makes it first when the checkout has none (it needs npm).
An editable install serves the checkout's own files and copies nothing.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent.parent
WEB = ROOT / "web"
PAGE_FILES = {".js", ".mjs", ".css"}
# What the server makes from the runtime on each machine (server/runtime/files.py made_folder), and
# vendor.py's own mark.
NOT_SHIPPED = ("bytecode", "snapshot", "bundle", ".stamp.json*")


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        vendored = (WEB / "vendor" / "manifest.json").is_file()
        if (
            not vendored
            and subprocess.run([sys.executable, str(WEB / "vendor.py")]).returncode != 0
        ):
            raise SystemExit(
                "A wheel of reactor carries the browser runtime, and web/vendor.py could not "
                "vendor it (it said why above): run `python web/vendor.py` where npm and the npm "
                "registry are reachable, then build again."
            )
        static = Path(self.build_lib) / "reactor" / "server" / "static"
        shutil.rmtree(static, ignore_errors=True)
        (static / "web").mkdir(parents=True)
        for name in ("index.html", "agent.json"):
            shutil.copy2(ROOT / name, static / name)
        for file in WEB.iterdir():
            if file.is_file() and file.suffix in PAGE_FILES:
                shutil.copy2(file, static / "web" / file.name)
        shutil.copytree(
            WEB / "vendor", static / "web" / "vendor", ignore=shutil.ignore_patterns(*NOT_SHIPPED)
        )
