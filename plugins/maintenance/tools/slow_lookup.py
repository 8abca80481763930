"""AI Tool: a lookup against a slow system; the signal stops the request at the timeout."""


async def invoke(args, context):
    # fetch_json threads context.signal into the request, so a timeout aborts it.
    return await context.fetch_json(f"{context.config['endpoint']}?ms={args.get('ms', 10000)}")
