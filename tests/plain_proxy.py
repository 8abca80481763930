"""A reverse proxy on loopback that does to a request what nginx does without its WebSocket lines
(`proxy_set_header Upgrade $http_upgrade;` and `Connection "upgrade"`): `Upgrade` and
`Connection` are hop-by-hop, so they are not passed on, and each request reaches the server as
a plain HTTP request (`Connection: close`); the server's answer comes back as it is."""

from __future__ import annotations

import socket
import threading
from urllib.parse import urlsplit

HOP_BY_HOP = (b"connection", b"upgrade", b"keep-alive", b"proxy-connection")


class PlainProxy:
    """`url` serves what `upstream` serves, one request per connection; `asked_upgrade` counts
    the requests that asked for a WebSocket, `requests` the request lines passed on."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.asked_upgrade = 0
        self.requests: list[str] = []
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self.serve, args=(client,), daemon=True).start()

    def serve(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(65536)
                if not chunk:
                    return
                head += chunk
            head, _, rest = head.partition(b"\r\n\r\n")
            first, *fields = head.split(b"\r\n")
            name = lambda field: field.partition(b":")[0].strip().lower()  # noqa: E731
            with self.lock:
                self.requests.append(first.decode("latin-1"))
                self.asked_upgrade += any(name(field) == b"upgrade" for field in fields)
            kept = [first, *(f for f in fields if name(f) not in HOP_BY_HOP), b"Connection: close"]
            with socket.create_connection(self.upstream) as upstream:
                upstream.sendall(b"\r\n".join(kept) + b"\r\n\r\n" + rest)
                threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
                _pipe(upstream, client)

    def close(self) -> None:
        self.listener.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    """Bytes from `source` to `sink` until either end closes."""
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
