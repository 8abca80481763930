"""One error tree: every error reactor raises is a ReactorError, and the envelope codes mean what
they say."""

import pytest

from reactor import DeclarationError, HttpError, NotFoundError, ReactorError, ToolError
from reactor.answer import error_detail
from reactor.errors import ApiError, CommandFailedError, InvalidArgumentsError, PageScriptError
from reactor.http import tool_refusal
from reactor.json_schema import SchemaError
from reactor.server.requests import StaleVersion


@pytest.mark.parametrize(
    "error",
    [
        HttpError(404, "gone"),
        PageScriptError("TypeError", "x is undefined"),
        SchemaError("bad schema"),
        NotFoundError("There is no deck 'x'."),
        DeclarationError("bad", owner="p", field="f"),
        ApiError(422, "The title is empty.", field="title"),
        StaleVersion("Read it again.", 3, None),
    ],
)
def test_every_error_belongs_to_the_one_tree(error):
    assert isinstance(error, ReactorError)


def test_not_found_is_a_tool_error_with_its_code_and_still_a_lookup_error():
    error = NotFoundError("There is no deck 'x'. Decks: a, b.", decks=["a", "b"])
    assert isinstance(error, ToolError) and isinstance(error, LookupError)
    assert (error.code, str(error), error.details) == (
        "not_found",
        "There is no deck 'x'. Decks: a, b.",
        {"decks": ["a", "b"]},
    )


def test_a_refused_http_answer_becomes_not_permitted_and_others_stay_http_errors():
    assert tool_refusal(HttpError(401, "Sign in to read plugins.")).code == "not_permitted"
    assert tool_refusal(HttpError(403, "Operators only.")).code == "not_permitted"
    assert tool_refusal(HttpError(500, "boom")) is None


def test_a_tool_error_with_a_code_that_is_not_one_is_a_declaration_error():
    with pytest.raises(DeclarationError, match="'oops' is not a tool failure code"):
        ToolError("oops", "x")


def test_an_errors_detail_carries_its_command_problems_and_the_persons_words():
    said = ToolError("not_found", "There is no deck 'x'.", display="That deck is gone.")
    failed = CommandFailedError("There is no deck 'x'.", command_id="decks.open", cause=said)
    assert error_detail(failed) == {
        "type": "CommandFailedError",
        "message": "There is no deck 'x'.",
        "command": "decks.open",
        "display": "That deck is gone.",
    }
    problems = [{"path": "$.id", "message": "?"}]
    refused = InvalidArgumentsError("Fix id.", command_id="decks.open", problems=problems)
    assert error_detail(refused)["problems"] == problems
    assert error_detail(ValueError("No."), command="decks.open") == {
        "type": "ValueError",
        "message": "No.",
        "command": "decks.open",
    }


def test_every_exception_class_of_reactor_and_its_plugins_is_in_the_tree():
    # Walks every module (the browser bridge, which needs `js`, by its source): a class that
    # raises outside the drawn tree fails here, wherever it is added.
    import ast
    import importlib
    import inspect
    import pkgutil
    from pathlib import Path

    import reactor
    import reactor_plugins

    stray = []
    for package in (reactor, reactor_plugins):
        for found in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if found.name.endswith("__main__"):
                continue
            if found.name == "reactor.browser":  # its modules import `js`: read, not imported
                for source in (Path(reactor.__file__).parent / "browser").glob("*.py"):
                    tree = ast.parse(source.read_text())
                    bases = [
                        ast.unparse(base)
                        for node in ast.walk(tree)
                        if isinstance(node, ast.ClassDef)
                        for base in node.bases
                    ]
                    where = f"reactor.browser.{source.stem}"
                    stray += [f"{where}: a class based on {b}" for b in bases if "Error" in b]
                continue
            module = importlib.import_module(found.name)
            for name, value in vars(module).items():
                if (
                    inspect.isclass(value)
                    and issubclass(value, BaseException)
                    and value.__module__ == module.__name__
                    and not issubclass(value, ReactorError)
                ):
                    stray.append(f"{found.name}.{name}")
    assert stray == []
