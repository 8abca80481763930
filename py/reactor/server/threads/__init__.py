"""A signed-in person's conversations with the page's chat, kept on the server: store.py (the
tables, versions, limits), routes.py (/api/threads)."""
