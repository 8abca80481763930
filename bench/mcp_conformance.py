"""The `@modelcontextprotocol/conformance` server scenarios against reactor's /mcp: the whole table.

    .venv/bin/python -m bench.mcp_conformance

After `./dev test` once (it installs the harness, and Node.js 22 where this machine's is older,
into .npm-mcp). The set-up and what each scenario is expected to do: tests/test_mcp_conformance.py.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_mcp_conformance import EXPECTED, run_scenarios  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        found = run_scenarios(Path(scratch) / "data")
    width = max(map(len, found))
    for name, (status, why) in sorted(found.items()):
        known = (
            ""
            if EXPECTED.get(name) in (status, None) or (status == "fail" and EXPECTED[name] in why)
            else "  (not as expected)"
        )
        print(f"{name:<{width}}  {status:<4}  {why[:100]}{known}")
    print(f"{sum(status == 'pass' for status, _ in found.values())} of {len(found)} scenarios pass")


if __name__ == "__main__":
    main()
