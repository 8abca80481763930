"""A route's one declaration (reactor.server.api): it checks each request before the handler runs
and answers every refusal in one shape; tiny apps built inline."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from reactor.errors import ApiError, DatabaseBusy, DeclarationError
from reactor.server.api import Call, Reply, declare, routes_of
from reactor.server.auth.protection import CrossSiteWriteGuard
from reactor.server.faults import ANSWERS
from reactor.server.openapi import openapi_document

NOTE = {
    "type": "object",
    "required": ["text"],
    "additionalProperties": False,
    "properties": {
        "text": {
            "type": "string",
            "minLength": 1,
            "maxLength": 20,
            "x-refusal": "A note is 1 to 20 characters.",
        },
        "pinned": {"type": "boolean"},
    },
    "x-unknown": "A note has no field {field}; send text and pinned.",
}


def app() -> TestClient:
    @declare(
        "POST",
        "/notes",
        "Add a note",
        body=NOTE,
        query={"copies": {"type": "integer", "minimum": 1, "maximum": 3}},
        replies={201: Reply({"type": "object"})},
    )
    async def add_note(call: Call) -> Any:
        return {"text": call.body["text"], "copies": call.query.get("copies", 1)}

    @declare(
        "GET", "/refuse", "Refuse", replies={200: Reply()}, refusals={429: "Always.", 503: "Busy."}
    )
    async def refuse(call: Call) -> Any:
        if call.request.query_params.get("busy"):
            raise DatabaseBusy("database is locked")
        raise ApiError(429, "Too many notes; wait a minute.", retry_after=60)

    return TestClient(Starlette(routes=routes_of(add_note, refuse), exception_handlers=ANSWERS))


@pytest.mark.parametrize(
    "body, field, sentence",
    [
        ({}, "text", "A note is 1 to 20 characters."),
        ({"text": ""}, "text", "A note is 1 to 20 characters."),
        ({"text": 5}, "text", "A note is 1 to 20 characters."),
        (
            {"text": "x", "colour": "red"},
            "colour",
            "A note has no field 'colour'; send text and pinned.",
        ),
        (
            {"text": "x", "pinned": "yes"},
            "pinned",
            "The body is not what this route takes: 'yes' is not of type 'boolean'.",
        ),
    ],
)
def test_a_body_outside_its_declaration_is_a_422_naming_the_field(body, field, sentence):
    answer = app().post("/notes", json=body)
    assert answer.status_code == 422
    assert (answer.json()["field"], answer.json()["error"]) == (field, sentence)


def test_a_body_inside_its_declaration_reaches_the_handler_with_its_one_success_status():
    answer = app().post("/notes?copies=2", json={"text": "milk", "pinned": True})
    assert answer.status_code == 201 and answer.json() == {"text": "milk", "copies": 2}


@pytest.mark.parametrize(
    "query", ["copies=0", "copies=-5", "copies=4", "copies=two", "copies=", "copies=1&copies=2"]
)
def test_a_query_value_outside_its_declaration_is_refused_never_clamped(query):
    answer = app().post(f"/notes?{query}", json={"text": "milk"})
    assert answer.status_code == 422 and answer.json()["field"] == "copies"


def test_a_refusal_is_one_shape_with_the_headers_it_promises():
    client = app()
    throttled = client.get("/refuse")
    assert throttled.status_code == 429 and throttled.headers["retry-after"] == "60"
    assert throttled.json() == {"error": "Too many notes; wait a minute."}
    busy = client.get("/refuse?busy=1")
    assert busy.status_code == 503 and busy.headers["retry-after"] == "1"


def test_the_document_is_written_from_the_same_declaration():
    routes = app().app.routes  # type: ignore[attr-defined]
    # the middleware in front declares what it refuses: the write guard's 403 and 415
    refusals = CrossSiteWriteGuard.refusals()
    document = openapi_document(routes, title="notes", version="1", refusals=refusals)
    add = document["paths"]["/notes"]["post"]
    assert add["operationId"] == "add_note"
    assert add["requestBody"]["content"]["application/json"]["schema"] is NOTE
    assert add["parameters"][0] == {
        "name": "copies",
        "in": "query",
        "required": False,
        "schema": {"type": "integer", "minimum": 1, "maximum": 3},
    }
    assert {"201", "400", "403", "413", "415", "422"} <= set(add["responses"])
    refused = document["paths"]["/refuse"]["get"]["responses"]
    assert refused["429"]["headers"]["retry-after"]["required"] is True


def test_a_status_declared_as_both_a_reply_and_a_refusal_is_refused_where_it_is_written():
    with pytest.raises(DeclarationError, match="404 is a reply already"):
        declare("GET", "/page", "Page", replies={404: Reply()}, refusals={404: "Gone."})(
            lambda call: None
        )  # type: ignore[arg-type, return-value]
