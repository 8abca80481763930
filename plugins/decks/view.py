"""What the decks view shows, drawn with `page.show("decks", state)` after every change.

The state is plain data for `view.js`: the list of decks, or the open deck with its slide
number; the renderer draws a slide's Markdown body with the page's CommonMark (web/markdown.js).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from reactor.page import Page

VIEW = "decks"


class DeckView:
    """The open deck, its slide (1-based) and whether it is presented; or the list of decks."""

    def __init__(self, page: Page) -> None:
        self._page = page
        self.deck: dict[str, Any] | None = None
        self.slide = 1
        self.presenting = False
        self.decks: list[dict[str, Any]] | None = None  # the list on screen, when it is shown
        self.message = ""
        self.focus = False  # the next drawing hands the keys to the slide (a deck was just opened)

    @property
    def is_open(self) -> bool:
        return self.deck is not None

    @property
    def slide_count(self) -> int:
        return len(self.deck["slides"]) if self.deck else 0

    def show_list(self, decks: list[dict[str, Any]], message: str = "") -> None:
        self.deck, self.decks, self.presenting, self.slide = None, decks, False, 1
        self._draw(message)

    def show_deck(
        self, deck: dict[str, Any], slide: int, message: str = "", *, focus: bool = False
    ) -> None:
        """Show `deck` at `slide`; `focus`: the person opened it, so ←/→ move it at once."""
        if self.deck is None or self.deck["id"] != deck["id"]:
            self.presenting = False
        self.deck, self.decks, self.slide, self.focus = deck, None, slide, focus
        self._draw(message)

    def show_slide(self, slide: int, message: str = "") -> None:
        self.slide = slide
        self._draw(message)

    def present(self) -> None:
        self.presenting = True
        self._draw("")

    def stop_presenting(self) -> None:
        if self.presenting:
            self.presenting = False
            self._draw("")

    def say(self, message: str) -> None:
        self._draw(message)

    def position(self) -> dict[str, Any]:
        """Where the screen is, as a model reads it after a move."""
        assert self.deck is not None
        current = self.deck["slides"][self.slide - 1]
        return {
            "id": self.deck["id"],
            "title": self.deck["title"],
            "slide": self.slide,
            "of": self.slide_count,
            "slideTitle": current["title"],
            "presenting": self.presenting,
        }

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"presenting": self.presenting, "message": self.message}
        if self.decks is not None:
            state["decks"] = self.decks
        if self.deck is not None:
            slides = [{"title": s["title"], "body": s["body"]} for s in self.deck["slides"]]
            state["deck"] = {"id": self.deck["id"], "title": self.deck["title"], "slides": slides}
            if "theme" in self.deck:
                state["deck"]["theme"] = self.deck["theme"]
            state["slide"] = self.slide
        if self.focus:
            state["focus"] = True
        return state

    def _draw(self, message: str) -> None:
        self.message = message
        state = self.state()
        self.focus = False  # once: a later redraw (a save, a message) leaves the focus where it is
        self._page.show(VIEW, state)


def change_questions(
    title: Callable[[str], Awaitable[str]],
) -> dict[str, Callable[[dict[str, Any]], str | Awaitable[str]]]:
    """What the person is asked before each change an assistant makes, by command id; a deck is
    named by its title, which `title(id)` may have to load (right after a reload)."""

    def naming(
        ask: Callable[[dict[str, Any], str], str],
    ) -> Callable[[dict[str, Any]], Awaitable[str]]:
        """`ask(args, deck)`, with the deck named ‘by its title’."""

        async def question(args: dict[str, Any]) -> str:
            return ask(args, f"‘{await title(str(args.get('id', '')))}’")

        return question

    return {
        "decks.createDeck": lambda args: f"Create the deck ‘{args['title']}’?",
        "decks.updateDeck": naming(lambda args, deck: f"Change the deck {deck}?"),
        "decks.updateSlide": naming(lambda args, deck: f"Change slide {args['slide']} of {deck}?"),
        "decks.addSlide": naming(lambda args, deck: f"Add a slide to {deck}?"),
        "decks.insertSlide": naming(
            lambda args, deck: f"Insert a slide at {args['slide']} in {deck}?"
        ),
        "decks.deleteSlide": naming(
            lambda args, deck: f"Delete slide {args['slide']} of {deck}? This cannot be undone."
        ),
        "decks.deleteDeck": naming(
            lambda args, deck: f"Delete the deck {deck}? This cannot be undone."
        ),
    }
