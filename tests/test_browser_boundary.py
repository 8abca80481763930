"""reactor.browser, the one package that imports `js` and `pyodide`: nothing else does (the rest
runs and is tested on CPython), and what the workers' JavaScript asks of it by name is there."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BROWSER = ROOT / "py" / "reactor" / "browser"


def imported(source: Path) -> set[str]:
    """The top-level names of the modules `source` imports (absolute imports)."""
    names = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_only_reactor_browser_imports_js_or_pyodide():
    sources = [*(ROOT / "py" / "reactor").rglob("*.py"), *(ROOT / "plugins").rglob("*.py")]
    outside = [
        str(source.relative_to(ROOT))
        for source in sources
        if BROWSER not in source.parents and imported(source) & {"js", "pyodide"}
    ]
    assert outside == [], "only reactor/browser/ may import js or pyodide"


def test_what_the_workers_javascript_calls_by_name_reactor_browser_exports():
    """web/reactor-worker.js starts it (`start`); web/ai-tool-worker.js runs a tool's code in it
    (`run_ai_tool`) and tells it it was restored (`restored`)."""
    called = set()
    for script in ("reactor-worker.js", "ai-tool-worker.js"):
        text = (ROOT / "web" / script).read_text()
        called |= set(re.findall(r'pyimport\("reactor\.browser"\)\.(\w+)', text))
        called |= set(re.findall(r"\bbridge\.(\w+)\(", text))
    assert called == {"start", "run_ai_tool", "restored"}
    package = ast.parse((BROWSER / "__init__.py").read_text())
    exported = next(
        ast.literal_eval(node.value)
        for node in package.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__"
    )
    assert called <= set(exported)
