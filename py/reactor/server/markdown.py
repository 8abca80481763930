"""The server's one Markdown: CommonMark by markdown-it-py, raw HTML off, so what a deck or a
crawled entry holds stays text; web/markdown.js renders the page's with markdown-it, the same
way."""

from __future__ import annotations

from markdown_it import MarkdownIt

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})


def markdown_html(text: str, *, heading_shift: int = 0) -> str:
    """HTML for `text`. `heading_shift` pushes headings down (a slide's `#` under its h2 title);
    links get rel="nofollow noopener"."""
    tokens = _markdown.parse(str(text))
    for token in tokens:
        if token.type in ("heading_open", "heading_close") and heading_shift:
            token.tag = f"h{min(int(token.tag[1]) + heading_shift, 6)}"
        for child in token.children or []:
            if child.type == "link_open":
                child.attrSet("rel", "nofollow noopener")
    return _markdown.renderer.render(tokens, _markdown.options, {})


__all__ = ["markdown_html"]
