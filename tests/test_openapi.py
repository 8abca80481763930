"""The server's OpenAPI document, and schemathesis against it with every check it has: requests
generated from every operation's declaration (valid and invalid), signed out, as a plain user and
as an operator. A valid request is accepted; an invalid one is refused with a 4xx; no answer is a
5xx, nor breaks its documented status, content type, headers or schema.

A bounded run is part of the suite (FUZZ_EXAMPLES per operation and identity); a longer one:
    REACTOR_FUZZ_EXAMPLES=500 ./dev test tests/test_openapi.py
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS as CHECKS_REGISTRY
from schemathesis.checks import load_all_checks
from schemathesis.config import SchemathesisConfig
from starlette.testclient import TestClient

from reactor.server.app import create_app
from reactor.server.auth.sessions import Auth

FUZZ_EXAMPLES = int(os.environ.get("REACTOR_FUZZ_EXAMPLES", "8"))


APP = create_app(
    tempfile.mkdtemp(prefix="reactor-fuzz-"),
    seed_demo=True,
    allow_hosts=["testserver", "localhost"],
)
AUTH: Auth = APP.state.context.auth
TOKENS: dict[str, str] = {}
IDENTITIES = {"signed-out": "", "operator": "ada", "plain-user": "eve"}


def signed_in(username: str) -> dict[str, str]:
    """Headers of a session of `username` (the demo's ada is an operator; eve has no group): a
    new one when a generated POST /auth/sign-out ended the last."""
    if not username:
        return {}
    if AUTH.user_for_token(TOKENS.get(username, "")) is None:
        TOKENS[username] = AUTH.sign_in(username, f"{username}-demo") or ""
    return {"authorization": f"Bearer {TOKENS[username]}"}


# A request the document calls invalid must be refused: 413 (too large) and 421 (host) refuse too.
REFUSALS = [400, 401, 403, 404, 405, 406, 409, 413, 415, 421, 422, 428, 429]
# A valid request is accepted, or refused for what it names (404, 403, 409); 422 too where a rule
# holds that no JSON Schema can state: a deck's id is the address's; a plugin record's code parses
# and defines its entry point, and its tool's inputSchema is a schema reactor can use; a crawl's
# address is one the server's allow-list and DNS let the crawler read.
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429"]
BEYOND_SCHEMA = ["put_deck", "create_record", "update_record", "crawl_source"]
# OAuth's endpoints answer as their RFCs say: 400 for a request no schema can tell from a good
# one (a code, a client, a redirect URI this server never gave or registered).
OAUTH = ["oauth_authorize", "oauth_token", "oauth_revoke", "oauth_register", "decide"]
schema = schemathesis.openapi.from_asgi(
    "/openapi.json",
    APP,
    config=SchemathesisConfig.from_dict(
        {
            "checks": {
                "negative_data_rejection": {"expected-statuses": REFUSALS},
                "positive_data_acceptance": {"expected-statuses": ACCEPTED},
            },
            # A real site and draft, so that valid requests reach the CMS's handlers (a drawn site
            # is one nobody has a role on: a 403 before any field is read).
            "parameters": {"path.site": "acme", "path.slug": "roadmap", "query.confirm": "roadmap"},
            "operations": [
                {
                    "include-operation-id": name,
                    "checks": {
                        "positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "422"]}
                    },
                }
                for name in BEYOND_SCHEMA
            ]
            # the page's link is a WebSocket: a plain GET is always its 426, saying what to set
            + [
                {
                    "include-operation-id": "link_without_upgrade",
                    "checks": {"positive_data_acceptance": {"expected-statuses": ["426"]}},
                }
            ]
            + [
                {
                    "include-operation-id": name,
                    "checks": {
                        "positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}
                    },
                }
                for name in OAUTH
            ],
        }
    ),
)
load_all_checks()
# every check schemathesis has (a bound on time is bench/'s to measure)
CHECKS = CHECKS_REGISTRY.get_all()


def walk(schema_: Any, where: str = "$"):
    """Every (place, subschema) of a JSON schema."""
    if isinstance(schema_, dict):
        yield where, schema_
        for key, value in schema_.items():
            yield from walk(value, f"{where}.{key}")
    elif isinstance(schema_, list):
        for index, value in enumerate(schema_):
            yield from walk(value, f"{where}[{index}]")


def operations():
    document = schema.raw_schema  # as GET /openapi.json served it
    for path, item in document["paths"].items():
        for method, described in item.items():
            yield f"{method.upper()} {path}", described


def test_every_route_is_in_the_document_with_an_operation_id_and_its_refusals():
    listed = dict(operations())
    assert {
        "POST /auth/sign-in",
        "PATCH /plugins/{id}",
        "PUT /api/decks/{id}",
        "POST /api/cms/sites/{site}/crawl",
        "GET /openapi.json",
        "POST /api/agent-tokens",
        "DELETE /api/agent-tokens/{id}",
        "POST /mcp",
    } <= set(listed)
    ids = [described["operationId"] for described in listed.values()]
    assert len(ids) == len(set(ids))
    for name, described in listed.items():
        statuses = set(described["responses"])
        assert "default" not in statuses, name  # each status is declared, none left to a catch-all
        assert {"421", "503"} <= statuses, name
        if name.split()[0] in ("POST", "PUT", "PATCH", "DELETE"):
            assert {"403", "415"} <= statuses, name
        if "requestBody" in described:
            assert {"400", "413", "422"} <= statuses, name


def test_every_object_schema_describes_the_members_it_requires():
    for name, described in operations():
        for where, part in walk(described):
            required = part.get("required")
            if isinstance(required, list) and required and part.get("type") == "object":
                assert set(required) <= set(part.get("properties", {})), f"{name} {where}"


def test_refusals_and_throttles_declare_the_headers_they_send():
    listed = dict(operations())
    assert "retry-after" in listed["POST /auth/sign-in"]["responses"]["429"]["headers"]
    assert "etag" in listed["GET /api/decks/{id}"]["responses"]["200"]["headers"]
    assert "etag" in listed["GET /web/{path}"]["responses"]["304"]["headers"]


@pytest.mark.parametrize(
    "path, allowed",
    [
        ("/plugins/x", "DELETE, GET, HEAD, PATCH, PUT"),
        ("/api/agent-tokens", "GET, HEAD, POST"),
        ("/auth/sign-in", "POST"),
        ("/api/cms/sites/acme/entries/welcome", "DELETE, GET, HEAD, PATCH"),
    ],
)
def test_a_method_a_path_does_not_take_is_a_405_naming_every_method_it_does(path, allowed):
    with TestClient(APP) as client:
        answer = client.request("OPTIONS", path)
    assert answer.status_code == 405 and answer.headers["allow"] == allowed
    assert answer.json()["error"].endswith(f"use {allowed}.")


def test_head_answers_wherever_get_does_with_the_same_status_and_no_body():
    with TestClient(APP) as client:
        for name in dict(operations()):
            method, path = name.split()
            if (
                method != "GET"
                or "{" in path
                or path in ("/api/maintenance/slow", "/api/agent-pages/stream", "/mcp")
            ):
                continue
            got, head = client.get(path), client.head(path)
            assert head.status_code == got.status_code and head.content == b"", path


@pytest.mark.parametrize(
    "path",
    [
        "/web/" + "a" * 256 + ".js",
        "/web/" + "a/" * 3000,
        "/web/%00",
        "/web/../../etc/passwd",
        "/vendor/{stamp}/" + "b" * 300,
        "/assets/plugins/decks/" + "c" * 300,
        "/sites/acme/" + "d" * 5000,
        "/decks/" + "e" * 5000 + "/print",
    ],
)
def test_no_file_name_or_path_makes_a_500(path):
    from reactor.server.app import runtime_manifest

    with TestClient(APP) as client:
        answer = client.get(path.replace("{stamp}", runtime_manifest().stamp))
    assert answer.status_code == 404


@pytest.mark.parametrize(
    "path, field",
    [
        ("/api/maintenance/entities?limit=0", "limit"),
        ("/api/maintenance/entities?limit=-5", "limit"),
        ("/api/maintenance/entities?limit=ten", "limit"),
        ("/api/cms/sites/acme/entries?collection=", "collection"),
        ("/api/cms/sites/acme/entries?collection=drafts", "collection"),
        ("/plugins?location=attic", "location"),
    ],
)
def test_a_query_value_outside_its_declaration_is_a_422_naming_it_not_clamped(path, field):
    with TestClient(APP) as client:
        answer = client.get(path, headers=signed_in("ada"))
    assert answer.status_code == 422 and answer.json()["field"] == field


# Left out: the route whose job is to wait (a slow source).
@pytest.mark.parametrize("identity", list(IDENTITIES))
@schema.exclude(method="GET", path="/api/maintenance/slow").parametrize()
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_generated_request_breaks_the_server_or_its_document(case, identity):
    case.call_and_validate(headers=signed_in(IDENTITIES[identity]), checks=CHECKS)
