import copy

import pytest
from conftest import app_server_over

from reactor.plugin_spec import discover_plugins
from test_ai_tools_declaration import RECORD


@pytest.fixture
def server(tmp_path, database_target):
    return app_server_over(
        tmp_path, plugins=discover_plugins(), seed_demo=True, database=database_target
    )


def signed_in(server, username):
    token = (
        server.client()
        .post("/auth/sign-in", json={"username": username, "password": f"{username}-demo"})
        .json()["token"]
    )
    return server.client({"authorization": f"Bearer {token}"})


@pytest.fixture
def ada(server):
    with signed_in(server, "ada") as client:
        yield client


@pytest.fixture
def bob(server):
    with signed_in(server, "bob") as client:
        yield client


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda r: r["settings"].pop("tool"), "settings.tool"),
        (lambda r: r["settings"]["tool"].update(description=""), "settings.tool.description"),
        (
            lambda r: r["settings"]["tool"].update(inputSchema={"type": "string"}),
            "settings.tool.inputSchema",
        ),
        (lambda r: r.update(name="not callable"), "name"),
        (
            lambda r: r["settings"]["tool"]["annotations"].update(sideEffect="maybe"),
            "settings.tool.annotations.sideEffect",
        ),
        (
            lambda r: r["settings"]["tool"]["annotations"].update(timeoutMs=0),
            "settings.tool.annotations.timeoutMs",
        ),
        (lambda r: r.update(code="print('no entry point')"), "code"),
        (lambda r: r.update(id="maintenance"), "id"),
    ],
)
def test_saving_a_wrong_ai_tool_is_a_422_naming_the_field_and_nothing_is_saved(ada, mutate, field):
    record = copy.deepcopy(RECORD)
    mutate(record)
    answer = ada.post("/plugins", json=record)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field and answer.json()["error"]
    assert ada.get(f"/plugins/{record['id']}").status_code == 404


@pytest.mark.parametrize(
    "body, status", [(b"{", 400), (b"[]", 400), (b'{"id": "' + b"x" * 300_000 + b'"}', 413)]
)
def test_malformed_saves_are_refused(ada, body, status):
    assert (
        ada.post("/plugins", content=body, headers={"content-type": "application/json"}).status_code
        == status
    )


def test_only_operators_save_and_only_signed_in_users_read(server, bob):
    assert server.client().post("/plugins", json=RECORD).status_code == 401
    assert bob.post("/plugins", json=RECORD).status_code == 403
    assert server.client().get("/plugins/maintenance-backlog").status_code == 401


def test_an_operator_creates_updates_and_deletes_a_record(ada):
    assert ada.post("/plugins", json=RECORD).status_code == 201
    assert ada.post("/plugins", json=RECORD).status_code == 409
    changed = copy.deepcopy(RECORD)
    changed["settings"]["tool"]["description"] = "Returns the answer, again."
    assert (
        ada.put("/plugins/answer", json=changed).json()["settings"]["tool"]["description"]
        == "Returns the answer, again."
    )
    assert ada.put("/plugins/other", json=changed).status_code == 422
    assert ada.put("/plugins/nothing", json={**changed, "id": "nothing"}).status_code == 404
    assert ada.delete("/plugins/answer").json() == {"deleted": "answer"}
    assert ada.get("/plugins/answer").status_code == 404


def test_two_apps_served_by_the_same_handlers_each_keep_their_own_records_and_switches(tmp_path):
    # the handlers are module-level: each app serves them with its own records and platform
    first = app_server_over(tmp_path / "first", plugins=discover_plugins(), seed_demo=True)
    second = app_server_over(tmp_path / "second", plugins=discover_plugins(), seed_demo=True)
    with signed_in(first, "ada") as ada, signed_in(second, "ada") as other_ada:
        assert ada.post("/plugins", json=RECORD).status_code == 201
        assert ada.patch("/plugins/maintenance", json={"enabled": False}).status_code == 200
        assert ada.get("/plugins/answer").status_code == 200
        assert other_ada.get("/plugins/answer").status_code == 404
        assert other_ada.delete("/plugins/answer").status_code == 404
        listed = {
            p["name"]: p["enabled"] for p in other_ada.get("/plugins").json() if "id" not in p
        }
        assert listed["maintenance"] is True
        with signed_in(second, "bob") as bob:  # the second app's records grant bob its data
            assert bob.get("/api/maintenance/entities?building=B-101").status_code == 200


def test_a_record_is_shown_only_to_the_users_and_groups_it_names(server, ada, bob):
    with signed_in(server, "eve") as eve:
        assert eve.get("/plugins/maintenance-backlog").status_code == 404
        assert eve.get("/plugins?location=ai-tool").json() == []
    assert bob.get("/plugins/maintenance-backlog").json()["name"] == "maintenance_backlog"
    assert bob.get("/plugins/open-task-count").status_code == 404  # only ada is named
    names = [r["name"] for r in bob.get("/plugins?location=ai-tool").json()]
    assert names == ["maintenance_backlog", "slow_lookup"]
    assert all("code" not in r for r in bob.get("/plugins").json())


def test_the_agent_tools_listing_offers_the_users_ai_tools_as_one_bundle(server, bob):
    bundle = next(b for b in bob.get("/plugins/agent-tools").json() if b["id"] == "ai-tools")
    assert bundle["toolset"] == ["maintenance_backlog", "slow_lookup"]
    assert bundle["commands"][0]["command"] == "aiTools.invoke.maintenance-backlog"
    assert bundle["commands"][0]["sideEffect"] == "none"
    anonymous = server.client().get("/plugins/agent-tools").json()
    assert "ai-tools" not in [b["id"] for b in anonymous]


def test_revoking_visibility_takes_effect_on_the_next_read(ada, bob):
    record = ada.get("/plugins/maintenance-backlog").json()
    record["visibility"] = {"users": [], "groups": ["operators"]}
    assert ada.put("/plugins/maintenance-backlog", json=record).status_code == 200
    assert bob.get("/plugins/maintenance-backlog").status_code == 404


def test_the_maintenance_data_lists_a_buildings_open_work_newest_first(server, bob):
    answer = bob.get("/api/maintenance/entities", params={"building": "B-101", "limit": 2}).json()
    assert [t["id"] for t in answer["tasks"]] == ["T-3", "T-1"]
    assert answer["total"] == 3 and answer["building"]["name"] == "North Hall"
    assert server.client().get("/api/maintenance/entities").status_code == 401
    assert bob.get("/api/maintenance/entities", params={"limit": "ten"}).status_code == 422
    # not clamped
    assert bob.get("/api/maintenance/entities", params={"limit": "0"}).json()["field"] == "limit"


def test_the_page_plugin_calls_the_backlog_tool_against_the_server_and_sees_a_revocation(
    server, ada, bob
):
    import asyncio

    from reactor import MemoryPage, Reactor
    from reactor.records import InProcessRunner
    from reactor_plugins.ai_tools import AI_TOOLS_PAGE_PLUGIN

    session = {"authorization": bob.headers["authorization"]}
    reactor = Reactor(
        services={
            "page": MemoryPage(base_url=server.url, headers=session, send=server.send),
            "ai_tool_runner": InProcessRunner(
                base_url=server.url, headers=session, send=server.send
            ),
        }
    )
    reactor.load_plugins([AI_TOOLS_PAGE_PLUGIN])

    async def scenario():
        await reactor.activate_plugins()
        backlog = await reactor.commands.execute(
            "aiTools.invoke.maintenance-backlog", {"buildingId": "B-102"}
        )
        record = ada.get("/plugins/maintenance-backlog").json()
        record["visibility"] = {"users": [], "groups": []}
        ada.put("/plugins/maintenance-backlog", json=record)
        try:
            await reactor.commands.execute(
                "aiTools.invoke.maintenance-backlog", {"buildingId": "B-102"}
            )
        except Exception as error:
            return backlog, error

    backlog, refused = asyncio.run(scenario())
    assert (
        backlog["outstanding"] == 2
        and backlog["tasks"][0]["title"] == "Recalibrate humidity sensors"
    )
    assert refused.cause.code == "not_permitted"
