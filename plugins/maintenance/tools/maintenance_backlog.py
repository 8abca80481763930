"""AI Tool: a building's outstanding maintenance work, newest first."""

from urllib.parse import urlencode


async def invoke(args, context):
    building = args["buildingId"].strip()
    limit = args.get("limit", 20)
    if not building:
        raise ValueError("Which building? Pass buildingId, e.g. B-101.")
    query = urlencode(
        {"entityType": context.config["entityTypeId"], "building": building, "limit": limit}
    )
    answer = await context.fetch_json(f"{context.config['endpoint']}?{query}")
    if answer["building"] is None:
        known = ", ".join(answer["buildings"])
        raise ValueError(f"There is no building {building!r}. Buildings: {known}.")
    return {
        "building": answer["building"],
        "outstanding": answer["total"],
        "tasks": [
            {"id": t["id"], "title": t["title"], "priority": t["priority"], "opened": t["opened"]}
            for t in answer["tasks"]
        ],
    }
