"""What a wheel of reactor carries: every package of the tree, as pyproject.toml lists them (a
package left out is missing from every installed reactor, though a checkout never notices)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_in_pyproject():
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(settings["packages"])
    found = set()
    for name, folder in settings["package-dir"].items():
        for source in (ROOT / folder).rglob("*.py"):  # a folder of modules, or of a plugin's code
            relative = source.parent.relative_to(ROOT / folder)
            if "__pycache__" not in relative.parts:
                found.add(".".join([name, *relative.parts]))
    assert found - listed == set(), "add them to [tool.setuptools] packages"
    assert listed - found == set(), "remove them from [tool.setuptools] packages"
