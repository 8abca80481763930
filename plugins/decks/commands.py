"""The decks commands: screen commands that change what the person sees, data commands that answer.

agent-tools.json declares each command (its label, description, schema); here is its code. Each
handler takes one `args` dict, already checked against that schema, and returns what a model
needs next. A request it cannot do raises ToolError with the code the model acts on and a
sentence naming the fix: `invalid_arguments` (a bad request the schema could not express),
`not_found` (NotFoundError, naming what there is), `conflict` (a taken id, someone else's change),
`unavailable`. The registry carries it as CommandFailedError; the model reads its code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactor import CommandOptions
from reactor.commands import Handler
from reactor.errors import ToolError
from reactor.page import Page
from reactor.urls import quote_segment

from .deck import deck_outline, deck_summary, slide_index, slugify
from .store import DeckStore
from .view import DeckView, change_questions

NO_DECK_OPEN = "no deck is open; open one with decks_open, using an id from decks_list_decks."
NOT_PRESENTING = "no deck is being presented."
OPEN_A_DECK_FIRST = "Open a deck first."

FULL_SCREEN_REFUSED = (
    "Full screen needs a click: press the Present button on the page (browsers "
    "only allow full screen after a user gesture)."
)


class DeckCommands:
    """The handlers, sharing one store and one view."""

    def __init__(self, store: DeckStore, view: DeckView, page: Page) -> None:
        self.store = store
        self.view = view
        self.page = page

    # Screen commands -------------------------------------------------------------------

    async def show_first_screen(self) -> None:
        """The list of decks, unless a deck or the list was shown meanwhile; a failure is said on
        screen."""
        try:
            decks = await self.store.list_decks()
        except Exception as error:
            decks, message = [], f"The decks could not be listed: {error}"
        else:
            message = self.store.warning or ("" if decks else "There are no decks yet.")
        if self.view.deck is None and self.view.decks is None:
            self.view.show_list(decks, message)

    async def show_list(self, args: dict[str, Any]) -> dict[str, Any]:
        decks = await self.store.list_decks()
        self.view.show_list(
            decks, self.store.warning or ("" if decks else "There are no decks yet.")
        )
        return {"shown": "list", "decks": decks, **_warning(self.store.warning)}

    async def open_deck(self, args: dict[str, Any]) -> dict[str, Any]:
        deck = await self.store.get_deck(args["id"])
        slide = args.get("slide", 1)
        slide_index(deck, slide)
        self.view.show_deck(deck, slide, focus=True)
        return self.view.position()

    def go_to_slide(self, args: dict[str, Any]) -> dict[str, Any]:
        slide_index(self._open_deck(), args["slide"])
        self.view.show_slide(args["slide"])
        return self.view.position()

    def next_slide(self, args: dict[str, Any]) -> dict[str, Any]:
        self._open_deck()
        if self.view.slide >= self.view.slide_count:
            return self._stay(
                f"This is the last slide ({self.view.slide} of {self.view.slide_count})."
            )
        self.view.show_slide(self.view.slide + 1)
        return self.view.position()

    def previous_slide(self, args: dict[str, Any]) -> dict[str, Any]:
        self._open_deck()
        if self.view.slide <= 1:
            return self._stay("This is the first slide.")
        self.view.show_slide(self.view.slide - 1)
        return self.view.position()

    async def present(self, args: dict[str, Any]) -> dict[str, Any]:
        self._open_deck()
        refusal = await self.page.request_fullscreen("decks")
        if refusal:
            reason = f"{FULL_SCREEN_REFUSED} The browser said: {refusal.rstrip('.')}."
            self.view.say(reason)
            return {"presenting": False, "reason": reason}
        self.view.present()
        return self.view.position()

    def stop_presenting(self, args: dict[str, Any]) -> dict[str, Any]:
        """Leave presentation mode (the page runs this when the person leaves full screen)."""
        self.view.stop_presenting()
        return {"presenting": False}

    async def print_deck(self, args: dict[str, Any]) -> dict[str, Any]:
        id = args.get("id") or (self.view.deck["id"] if self.view.deck else None)
        if id is None:
            raise ToolError(
                "invalid_arguments",
                "Which deck? Pass its `id`, as listed by decks_list_decks, or open one first.",
            )
        deck = await self.store.get_deck(id)
        url = f"/decks/{quote_segment(id)}/print"
        answer: dict[str, Any] = {"id": id, "url": url, "opened": await self.page.open_tab(url)}
        if answer["opened"]:
            answer["shown"] = deck["title"]  # what the new tab shows (the card's line names it)
        else:
            answer["message"] = f"The browser blocked the new tab; the printable page is at {url}"
            self.view.say(answer["message"])
        if not self.store.has_server:
            answer["warning"] = (
                "This page keeps its decks without a server, so the printable page cannot "
                "show them."
            )
        elif not self.store.is_saved(id):
            answer["warning"] = (
                "The printable page shows the server's copy; this deck's latest changes are "
                "only in this page."
            )
        return answer

    # Data commands ---------------------------------------------------------------------

    async def list_decks(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"decks": await self.store.list_decks(), **_warning(self.store.warning)}

    async def get_deck(self, args: dict[str, Any]) -> dict[str, Any]:
        deck = await self.store.get_deck(args["id"])
        return {"deck": deck, "outline": deck_outline(deck)}

    async def create_deck(self, args: dict[str, Any]) -> dict[str, Any]:
        taken = {deck["id"] for deck in await self.store.list_decks()}
        deck: dict[str, Any] = {
            "id": args.get("id") or _free_id(slugify(args["title"]), taken),
            "title": args["title"],
            "slides": args.get("slides") or [{"title": args["title"], "body": ""}],
        }
        if "theme" in args:
            deck["theme"] = args["theme"]
        report = await self.store.create_deck(deck)
        await self._refresh(deck, report)
        return {**deck_summary(deck), "outline": deck_outline(deck), **report}

    async def update_deck(self, args: dict[str, Any]) -> dict[str, Any]:
        changes: dict[str, Any] = {
            key: args[key] for key in ("title", "theme", "slides") if key in args
        }
        if not changes:
            raise ToolError(
                "invalid_arguments", "Say what to change: pass a new `title`, `theme` or `slides`."
            )
        deck, report = await self._edit(args["id"], lambda deck: deck.update(changes))
        return {**deck_summary(deck), "outline": deck_outline(deck), **report}

    async def list_slides(self, args: dict[str, Any]) -> dict[str, Any]:
        deck = await self.store.get_deck(args["id"])
        return {"id": deck["id"], "title": deck["title"], "slides": deck_outline(deck)}

    async def get_slide(self, args: dict[str, Any]) -> dict[str, Any]:
        deck = await self.store.get_deck(args["id"])
        slide = deck["slides"][slide_index(deck, args["slide"])]
        return {
            "id": deck["id"],
            "deckTitle": deck["title"],
            "slide": args["slide"],
            "of": len(deck["slides"]),
            **slide,
        }

    async def update_slide(self, args: dict[str, Any]) -> dict[str, Any]:
        changes = {key: args[key] for key in ("title", "body", "notes") if key in args}
        if not changes:
            raise ToolError(
                "invalid_arguments", "Say what to change: pass a new `title`, `body` or `notes`."
            )

        def change(deck: dict[str, Any]) -> None:
            deck["slides"][slide_index(deck, args["slide"])].update(changes)

        deck, report = await self._edit(args["id"], change)
        slide = deck["slides"][args["slide"] - 1]
        return {
            "id": deck["id"],
            "deckTitle": deck["title"],
            "slide": args["slide"],
            "of": len(deck["slides"]),
            **slide,
            **report,
        }

    async def add_slide(self, args: dict[str, Any]) -> dict[str, Any]:
        deck, report = await self._edit(
            args["id"], lambda deck: deck["slides"].append(_new_slide(args))
        )
        return {
            "id": deck["id"],
            "deckTitle": deck["title"],
            "slide": len(deck["slides"]),
            "outline": deck_outline(deck),
            **report,
        }

    async def insert_slide(self, args: dict[str, Any]) -> dict[str, Any]:
        def change(deck: dict[str, Any]) -> None:
            deck["slides"].insert(slide_index(deck, args["slide"], insert=True), _new_slide(args))

        deck, report = await self._edit(args["id"], change)
        return {
            "id": deck["id"],
            "deckTitle": deck["title"],
            "slide": args["slide"],
            "outline": deck_outline(deck),
            **report,
        }

    async def delete_slide(self, args: dict[str, Any]) -> dict[str, Any]:
        def change(deck: dict[str, Any]) -> None:
            index = slide_index(deck, args["slide"])
            if len(deck["slides"]) == 1:
                raise ToolError(
                    "invalid_arguments",
                    "A deck keeps at least one slide; change this one with decks_update_slide, "
                    "or delete the deck with decks_delete_deck.",
                )
            del deck["slides"][index]

        deck, report = await self._edit(args["id"], change)
        return {
            "id": deck["id"],
            "deckTitle": deck["title"],
            "deleted": args["slide"],
            "outline": deck_outline(deck),
            **report,
        }

    async def delete_deck(self, args: dict[str, Any]) -> dict[str, Any]:
        id = args["id"]
        title = await self.store.title(id)  # learnt before the deck is gone
        report = await self.store.delete_deck(id)
        decks = await self.store.list_decks()
        if self.view.decks is not None or (self.view.deck and self.view.deck["id"] == id):
            self.view.show_list(decks, report.get("warning") or f"The deck ‘{title}’ was deleted.")
        elif "warning" in report:
            self.view.say(report["warning"])
        return {"deleted": id, "deckTitle": title, "decks": decks, **report}

    # Helpers ---------------------------------------------------------------------------

    def _open_deck(self) -> dict[str, Any]:
        if self.view.deck is None:
            raise ToolError("unavailable", NO_DECK_OPEN.capitalize(), display=OPEN_A_DECK_FIRST)
        return self.view.deck

    def _stay(self, message: str) -> dict[str, Any]:
        self.view.say(message)
        return {**self.view.position(), "message": message}

    async def _edit(
        self, id: str, change: Callable[[dict[str, Any]], object]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Change a copy of the deck, store it whole (validated there), then redraw."""
        deck = await self.store.get_deck(id)
        change(deck)
        report = await self.store.update_deck(deck)
        await self._refresh(deck, report)
        return deck, report

    async def _refresh(self, deck: dict[str, Any], report: dict[str, Any]) -> None:
        """Redraw when the change is on screen; a failed save is told to the person either way."""
        message = report.get("warning", "")
        if self.view.deck is not None and self.view.deck["id"] == deck["id"]:
            self.view.show_deck(deck, min(self.view.slide, len(deck["slides"])), message)
        elif self.view.decks is not None:
            self.view.show_list(await self.store.list_decks(), message)
        elif message:
            self.view.say(message)


def deck_handlers(commands: DeckCommands) -> dict[str, Handler | CommandOptions]:
    """The code of each command agent-tools.json declares: what runs, when it can, what a
    person is asked before a change."""
    view = commands.view
    run: dict[str, Handler] = {
        "decks.list": commands.show_list,
        "decks.open": commands.open_deck,
        "decks.goToSlide": commands.go_to_slide,
        "decks.nextSlide": commands.next_slide,
        "decks.previousSlide": commands.previous_slide,
        "decks.present": commands.present,
        "decks.stopPresenting": commands.stop_presenting,
        "decks.print": commands.print_deck,
        "decks.listDecks": commands.list_decks,
        "decks.getDeck": commands.get_deck,
        "decks.createDeck": commands.create_deck,
        "decks.updateDeck": commands.update_deck,
        "decks.listSlides": commands.list_slides,
        "decks.getSlide": commands.get_slide,
        "decks.updateSlide": commands.update_slide,
        "decks.addSlide": commands.add_slide,
        "decks.insertSlide": commands.insert_slide,
        "decks.deleteSlide": commands.delete_slide,
        "decks.deleteDeck": commands.delete_deck,
    }
    handlers: dict[str, Handler | CommandOptions] = dict(run)
    for id in ("decks.goToSlide", "decks.nextSlide", "decks.previousSlide", "decks.present"):
        handlers[id] = CommandOptions(
            run[id],
            is_enabled=lambda args: view.is_open,
            disabled_reason=NO_DECK_OPEN,
            disabled_display=OPEN_A_DECK_FIRST,
        )
    handlers["decks.stopPresenting"] = CommandOptions(
        commands.stop_presenting,
        is_enabled=lambda args: view.presenting,
        disabled_reason=NOT_PRESENTING,
    )
    for id, question in change_questions(commands.store.title).items():
        handlers[id] = CommandOptions(run[id], confirmation=question)
    return handlers


def _new_slide(args: dict[str, Any]) -> dict[str, Any]:
    return {key: args[key] for key in ("title", "body", "notes") if key in args}


def _free_id(base: str, taken: set[str]) -> str:
    """`base`, or `base-2`, `base-3`... whichever is free."""
    candidate, number = base, 2
    while candidate in taken:
        candidate, number = f"{base}-{number}", number + 1
    return candidate


def _warning(warning: str) -> dict[str, str]:
    return {"warning": warning} if warning else {}
