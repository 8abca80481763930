"""Crawled HTML turned into Markdown text: headings, paragraphs, list items and code as words.

Nothing of the markup survives: scripts, styles and frames are dropped, and every character
the source meant as text (`&lt;script&gt;` included) is kept as text, for the public page to
escape. The parser also notes what a crawl needs: the title, the description, the links of
the articles on an index page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

SKIPPED = {
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "svg",
    "object",
    "embed",
    "head",
    "nav",
    "form",
}
BLOCKS = {
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "pre",
    "blockquote",
    "dd",
    "dt",
    "figcaption",
    "td",
    "th",
}
VOID = {
    "br",
    "img",
    "hr",
    "meta",
    "link",
    "input",
    "source",
    "area",
    "base",
    "col",
    "wbr",
    "track",
    "param",
}


@dataclass
class Block:
    kind: str
    text: str
    in_article: bool
    in_main: bool


@dataclass
class ParsedPage:
    title: str = ""
    description: str = ""
    heading: str = ""
    blocks: list[Block] = field(default_factory=list)
    article_links: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        """The body: the article's blocks if there is an article, else main's, else all."""
        chosen = (
            [b for b in self.blocks if b.in_article]
            or [b for b in self.blocks if b.in_main]
            or self.blocks
        )
        if chosen and chosen[0].kind == "h1" and chosen[0].text == self.heading:
            chosen = chosen[1:]  # the title is the entry's title, not its first line
        text = ""
        for previous, block in zip([None, *chosen], chosen):
            joint = "\n" if previous is not None and previous.kind == block.kind == "li" else "\n\n"
            text += (joint if text else "") + _markdown(block)
        return text.strip()

    def first_paragraph(self) -> str:
        return next((b.text for b in self.blocks if b.kind == "p" and b.text), "")


def parse_html(html: str) -> ParsedPage:
    parser = _Parser()
    parser.feed(html)
    parser.close()
    return parser.page


def html_to_markdown(html: str) -> str:
    """A fragment of HTML (a feed's content, a WordPress field) as Markdown text."""
    page = parse_html(html)
    loose = page.markdown()
    return loose or " ".join(page_text(html).split())


def page_text(html: str) -> str:
    """Every piece of text of a fragment, joined: for titles given as HTML."""
    parser = _Parser()
    parser.feed(html)
    parser.close()
    return " ".join((" ".join(parser.loose)).split())


def _markdown(block: Block) -> str:
    if block.kind.startswith("h") and block.kind[1:].isdigit():
        return "#" * int(block.kind[1]) + " " + block.text
    if block.kind == "li":
        return "- " + block.text
    if block.kind == "pre":
        return "```\n" + block.text + "\n```"
    if block.kind == "blockquote":
        return "> " + block.text
    return block.text


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = ParsedPage()
        self.loose: list[str] = []
        self._skip = 0
        self._skipped_time = 0
        self._article = 0
        self._main = 0
        self._block: tuple[str, list[str]] | None = None
        self._in_title = False
        self._article_link_taken = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            if tag == "meta":
                self._meta(dict(attrs))
            if tag == "br" and self._block:
                self._block[1].append("\n" if self._block[0] == "pre" else " ")
            return
        if tag == "title":
            self._in_title = True
        if tag in SKIPPED or (tag == "time" and self._block is None):
            # A date on its own is the page's metadata, not its text.
            self._skip += 1
            self._skipped_time += tag == "time"
            return
        if tag == "article":
            self._article += 1
            self._article_link_taken = False
        elif tag == "main":
            self._main += 1
        elif tag == "a" and not self._skip:
            values = dict(attrs)
            href = values.get("href") or ""
            bookmark = "bookmark" in (values.get("rel") or "").split()
            if href and (bookmark or (self._article and not self._article_link_taken)):
                self._article_link_taken = True
                if href not in self.page.article_links:
                    self.page.article_links.append(href)
        if tag in BLOCKS and not self._skip:
            self._end_block()
            self._block = (tag, [])

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in SKIPPED or (tag == "time" and self._skipped_time):
            self._skip = max(0, self._skip - 1)
            self._skipped_time -= tag == "time"
            return
        if tag in BLOCKS and self._block and self._block[0] == tag:
            self._end_block()
        elif tag == "article":
            self._end_block()
            self._article = max(0, self._article - 1)
        elif tag == "main":
            self._end_block()
            self._main = max(0, self._main - 1)

    def handle_data(self, data: str) -> None:
        if self._in_title and not self.page.title:
            self.page.title = " ".join(data.split())
        if self._skip:
            return
        self.loose.append(data)
        if self._block is not None:
            self._block[1].append(data)
        elif data.strip():
            self._block = ("p", [data])  # text outside any block is a paragraph of its own

    def close(self) -> None:
        super().close()
        self._end_block()

    def _meta(self, attrs: dict[str, str | None]) -> None:
        name = (attrs.get("name") or attrs.get("property") or "").lower()
        if name in ("description", "og:description") and not self.page.description:
            self.page.description = " ".join((attrs.get("content") or "").split())

    def _end_block(self) -> None:
        if self._block is None:
            return
        kind, parts = self._block
        self._block = None
        raw = "".join(parts)
        text = raw.strip("\n") if kind == "pre" else " ".join(raw.split())
        if not text:
            return
        if kind == "h1" and not self.page.heading:
            self.page.heading = text
        self.page.blocks.append(Block(kind, text, self._article > 0, self._main > 0))
