"""What the server fetches on someone's word, guarded against server-side request forgery:
guard.py (which addresses may be reached), fetch.py (a GET pinned to them, under one deadline,
size-capped), deadline.py (that deadline)."""
