"""What the accessibility tests ask of a page: axe-core's verdict (from npm, pinned, given to
the page only by the test), WCAG's contrast ratio, and the page's controls as Tab reaches them.
Each takes a Playwright page (Chromium) or an engines.EnginePage (any engine)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reactor.testing.engines import FOCUS_IN, EnginePage

CHECKOUT = Path(__file__).resolve().parents[1]
# ./dev test installs it, pinned (install_npm_test)
AXE = CHECKOUT / ".npm-test" / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")

RUN_AXE = """async (scope) => {
  const found = await axe.run(scope ? document.querySelector(scope) : document,
                              {resultTypes: ["violations"]});
  return found.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => `${n.target.join(" ")}: ${n.failureSummary.replace(/\\s+/g, " ")}`),
  }));
}"""

# The controls a person can use: what Tab must reach. Each is named by what a person would call
# it (its kind, name and words) and its rank among controls so named, which survives a redraw.
CONTROLS = (
    "a[href], button, input:not([type=hidden]), select, textarea, summary, "
    "[tabindex]:not([tabindex='-1'])"
)
NAMED = f"""
  const all = () => [...document.querySelectorAll(`{CONTROLS}`)];
  const words = (e) => [e.tagName, e.id, e.getAttribute("name"), e.getAttribute("aria-label"),
                        e.dataset.testid, e.dataset.command, e.textContent.trim().slice(0, 40)]
    .filter(Boolean).join(" ");
  const rank = (e) => all().filter((o) => words(o) === words(e)).indexOf(e) + 1;
  const named = (e) => `${{words(e)}} #${{rank(e)}}`;
  const usable = (e) => !e.disabled && !e.closest("[inert]")
    && e.checkVisibility({{visibilityProperty: true}})
    && !(e.closest("details:not([open])") && e.tagName !== "SUMMARY");
"""
VISIBLE_CONTROLS = f"() => {{ {NAMED} return all().filter(usable).map(named); }}"
# The control Tab has reached; null on none; false once the focus has left the page (for the
# browser's own controls: Firefox's toolbar).
FOCUSED = f"""() => {{ {NAMED}
  const e = document.activeElement;
  if (!document.hasFocus()) return false;
  return !e || e === document.body ? null : named(e);
}}"""
# Sequential focus navigation from the top of the page: from a mark there that takes the focus
# but no Tab (a blurred control would stay the starting point).
FROM_THE_TOP = """() => {
  const mark = document.createElement("span");
  mark.tabIndex = -1;
  mark.dataset.tabFromHere = "";
  document.body.prepend(mark);
  mark.focus();
}"""
MARK_GONE = "() => { document.querySelector('[data-tab-from-here]')?.remove(); }"

# WCAG 2.2's relative luminance and contrast ratio of what is drawn: the element's text over the
# first background behind it, each through the opacity of the element and its ancestors, over
# `backdrop` (what shows through a faded box).
CONTRAST = """([selector, backdrop]) => {
  const rgba = (text) => {
    const c = text.match(/[\\d.]+/g).map(Number);
    return [c[0], c[1], c[2], c[3] ?? 1];
  };
  const over = (top, under) => top.slice(0, 3).map((v, i) => v * top[3] + under[i] * (1 - top[3]));
  const linear = (v) => (v /= 255) <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  const light = (c) => {
    const [r, g, b] = c.map(linear);
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => {
    const [x, y] = [light(a), light(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const under = rgba(backdrop);
  return [...document.querySelectorAll(selector)].map((e) => {
    let fade = 1, back = null;
    for (let n = e; n instanceof Element; n = n.parentElement) {
      const style = getComputedStyle(n);
      fade *= Number(style.opacity);
      if (!back && rgba(style.backgroundColor)[3] > 0) back = rgba(style.backgroundColor);
    }
    const text = rgba(getComputedStyle(e).color);
    const ground = over(back ?? [...under, 1], under);
    const shown = (c) => over([...c.slice(0, 3), fade], under);
    const drawnText = shown(over(text, ground)), drawnGround = shown(ground);
    const shownRatio = ratio(drawnText, drawnGround);
    return {text: e.textContent.trim(), ratio: Math.round(shownRatio * 100) / 100};
  });
}"""


def run(page: Any, function: str, arg: Any = None) -> Any:
    """`function(arg)` in the page: a Playwright page's, or an engines.EnginePage's (any engine)."""
    return page.run(function, arg) if hasattr(page, "run") else page.evaluate(function, arg)


def press(page: Any, key: str) -> None:
    """A person's press of `key` ("Tab", "Shift+Tab"), in a Playwright page or an EnginePage."""
    if isinstance(page, EnginePage):
        page.press(key)
    else:
        page.keyboard.press(key)


def axe_violations(page: Any, scope: str = "") -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now (or within `scope`).
    Its script is evaluated in the page by the test (no tag, no CSP exception, no CDN)."""
    if not AXE.exists():
        pytest.skip("axe-core is not installed: ./dev test installs it (pinned) into .npm-test/")
    if not run(page, "() => typeof window.axe !== 'undefined'"):
        run(page, "() => {\n" + AXE.read_text(encoding="utf-8") + "\n}")
    found = run(page, RUN_AXE, scope or None)
    return [v for v in found if v["impact"] in SERIOUS]


def said(violations: dict[str, list[dict[str, Any]]]) -> str:
    """The violations by the state of the page they were found in, one line per element."""
    lines = []
    for state, found in violations.items():
        for v in found:
            lines.append(f"{state}: {v['id']} ({v['impact']}): {v['help']}")
            lines += [f"    {node}" for node in v["nodes"][:6]]
    return "\n".join(lines)


def contrast(page: Any, selector: str, backdrop: str = "rgb(0, 0, 0)") -> list[dict[str, Any]]:
    """The contrast ratio each element matching `selector` is drawn at (text against background)."""
    return run(page, CONTRAST, [selector, backdrop])  # type: ignore[no-any-return]


def tab_cycle(page: Any, limit: int = 400, *, tab: str = "Tab") -> list[str]:
    """The visible controls that `tab` (Tab), pressed from the top of the page round to its first
    stop again (or until it leaves the page for the browser's toolbar), never focused: by what a
    person would call them (visible before and after)."""
    controls = run(page, VISIBLE_CONTROLS)
    run(page, FROM_THE_TOP)
    reached: list[str] = []
    for _ in range(limit):
        press(page, tab)
        name = run(page, FOCUSED)
        if name is False or (name is not None and reached and name == reached[0]):
            break
        if name is not None and name not in reached:
            reached.append(name)
    run(page, MARK_GONE)
    # A control the page redrew meanwhile (a palette after a command's availability changed) is
    # judged only if it is still there.
    still = run(page, VISIBLE_CONTROLS)
    return [name for name in controls if name in still and name not in reached]


LOCATED_FOCUS_IN = "(e) => e === document.activeElement || e.contains(document.activeElement)"
LEFT = "() => !document.hasFocus()"


def tab_to(
    page: Any, target: Any, *, backwards: bool = False, limit: int = 200, tab: str = "Tab"
) -> int:
    """Press `tab` (Tab; Shift+ it, backwards) until `target` — a Playwright locator, or the CSS
    selector of an element — has the focus; how many presses it took."""
    key = f"Shift+{tab}" if backwards else tab
    for presses in range(1, limit + 1):
        press(page, key)
        if isinstance(target, str):
            there = run(page, FOCUS_IN, target)
        else:
            there = target.evaluate(LOCATED_FOCUS_IN)
        if there:
            return presses
    # Chromium's and WebKit's focus comes back from the browser's controls; Firefox's, under
    # WebDriver's keys, does not.
    left = " (the browser's own controls have the focus, not the page)" if run(page, LEFT) else ""
    pytest.fail(f"{limit} presses of {key} never reached {target}{left}")
