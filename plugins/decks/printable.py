"""The printable page of a deck: every slide on its own sheet, all text escaped.

Served with a Content-Security-Policy that allows no script, so even a hostile slide that
slipped past escaping could not run.
"""

from __future__ import annotations

from html import escape
from typing import Any

from reactor.server.markdown import markdown_html

PRINT_CSS = """
@page { size: A4 landscape; margin: 12mm; }
body { font: 16px/1.5 system-ui, sans-serif; color: #111; margin: 0; }
header { padding: 1rem 2rem; color: #555; }
section.slide { break-after: page; page-break-after: always; padding: 2rem;
  border-bottom: 1px solid #ddd; min-height: 60vh; }
section.slide:last-of-type { break-after: auto; page-break-after: auto; }
.number { color: #777; font-size: .85rem; }
h1 { font-size: 1.4rem; margin: 0; }
h2 { font-size: 2rem; margin: .25rem 0 1rem; }
aside.notes { margin-top: 2rem; font-size: .85rem; color: #555; border-left: 3px solid #ccc;
  padding-left: .75rem; }
@media print { header { display: none; } section.slide { border: none; } }
"""


def printable_html(spec: dict[str, Any]) -> str:
    """The whole deck as one HTML document, ready for the browser's Print."""
    count = len(spec["slides"])
    sections = []
    for number, slide in enumerate(spec["slides"], 1):
        notes = slide.get("notes", "").strip()
        sections.append(
            '<section class="slide">'
            f'<p class="number">Slide {number} of {count}</p>'
            f"<h2>{escape(slide['title'])}</h2>"
            f"{blocks_html(slide['body'])}"
            + (
                f'<aside class="notes"><strong>Notes:</strong> {escape(notes)}</aside>'
                if notes
                else ""
            )
            + "</section>"
        )
    title = escape(spec["title"])
    return (
        "<!doctype html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{PRINT_CSS}</style></head><body>"
        f"<header><h1>{title}</h1><p>Use your browser's Print (Ctrl+P or ⌘P) to print or "
        "save as PDF.</p></header>" + "".join(sections) + "</body></html>\n"
    )


def missing_html(id: str) -> str:
    """The page a person sees at the printable address of a deck there is not."""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8"><title>No such deck</title>'
        f"<style>{PRINT_CSS}</style></head><body><header>"
        f"<h1>There is no deck ‘{escape(id[:80])}’.</h1>"
        '<p>It may have been deleted or renamed. <a href="/#/decks">Back to the decks</a></p>'
        "</header></body></html>\n"
    )


def blocks_html(body: str) -> str:
    """A slide's Markdown body as HTML (CommonMark, raw HTML shown as text); its headings sit
    under the slide's h2 title."""
    return markdown_html(body, heading_shift=2)
