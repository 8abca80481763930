"""A small Markdown renderer for the public pages that escapes first and marks up second, so
nothing an entry holds can become markup: headings, paragraphs, lists, quotes, code, emphasis
and http(s) links only."""

from __future__ import annotations

import html
import re

HEADING = re.compile(r"(#{1,6})\s+(.*)")
BULLET = re.compile(r"[-*+]\s+(.*)")
NUMBERED = re.compile(r"\d{1,9}[.)]\s+(.*)")
LINK = re.compile(r"\[([^\]\n]{1,500})\]\(([^)\s]{1,2000})\)")
STRONG = re.compile(r"\*\*(.+?)\*\*")
EMPHASIS = re.compile(r"(?<![*\w])\*(?!\s)(.+?)(?<!\s)\*(?![*\w])")


def markdown_html(text: str) -> str:
    """HTML for `text`; every character of it is escaped before any tag is added."""
    out: list[str] = []
    paragraph: list[str] = []
    items: list[str] = []
    list_tag = ""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")

    def flush() -> None:
        nonlocal list_tag
        if paragraph:
            out.append(f"<p>{inline(' '.join(paragraph))}</p>")
            paragraph.clear()
        if items:
            out.append(f"<{list_tag}>" + "".join(f"<li>{inline(i)}</li>" for i in items) + f"</{list_tag}>")
            items.clear()
            list_tag = ""

    index = 0
    while index < len(lines):
        line = lines[index].strip()
        index += 1
        if line.startswith("```"):
            flush()
            code = []
            while index < len(lines) and not lines[index].strip().startswith("```"):
                code.append(lines[index])
                index += 1
            index += 1
            out.append(f"<pre><code>{html.escape(chr(10).join(code))}</code></pre>")
        elif not line:
            flush()
        elif match := HEADING.fullmatch(line):
            flush()
            level = len(match.group(1))
            out.append(f"<h{level}>{inline(match.group(2))}</h{level}>")
        elif (match := BULLET.fullmatch(line)) or (match := NUMBERED.fullmatch(line)):
            tag = "ul" if BULLET.fullmatch(line) else "ol"
            if paragraph or (items and tag != list_tag):
                flush()
            list_tag = tag
            items.append(match.group(1))
        elif line.startswith(">"):
            flush()
            out.append(f"<blockquote><p>{inline(line.lstrip('>').strip())}</p></blockquote>")
        else:
            if items:
                flush()
            paragraph.append(line)
    flush()
    return "\n".join(out)


def inline(text: str) -> str:
    """One line's inline marks; code spans are escaped and left alone."""
    parts = text.split("`")
    rendered = []
    for number, part in enumerate(parts):
        if number % 2 == 1 and number < len(parts) - 1:
            rendered.append(f"<code>{html.escape(part)}</code>")
        else:
            rendered.append(_marks(html.escape(part if number % 2 == 0 else "`" + part)))
    return "".join(rendered)


def _marks(escaped: str) -> str:
    escaped = LINK.sub(_link, escaped)
    escaped = STRONG.sub(r"<strong>\1</strong>", escaped)
    return EMPHASIS.sub(r"<em>\1</em>", escaped)


def _link(match: re.Match[str]) -> str:
    label, target = match.group(1), match.group(2)
    raw = html.unescape(target)
    if raw.startswith(("http://", "https://")) or (raw.startswith("/") and not raw.startswith("//")):
        return f'<a href="{target}" rel="nofollow noopener">{label}</a>'
    return match.group(0)  # javascript:, data: and the like stay visible text
