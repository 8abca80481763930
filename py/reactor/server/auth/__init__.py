"""Who is asking, and what a browser can be made to send: sessions and sign-in, passwords,
sign-in limits, the host and cross-site checks, cross-origin access."""
