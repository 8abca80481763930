"""One deadline for a whole fetch: connect, TLS handshake, status line, headers, body, and every
redirect hop — enforced by a watchdog timer that shuts the socket down when the time is up.

A socket timeout bounds each recv, not the exchange: a source that sent its status line one byte
every few seconds never tripped it and held a crawl for over a minute. Setting the timeout to the
time left before each recv would work too, but only through the recv calls we can wrap; http.client
reads through `makefile` and the TLS layer reads in C. Shutting the socket down wakes whichever of
them is blocked, however it reads. A shut-down socket reads as the end of the answer, so callers
ask `expired` before trusting what they read.
"""

from __future__ import annotations

import socket
import threading
import time


class Deadline:
    """`seconds` from now; `watch` the socket in use, `cancel` when the fetch is over."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._end = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._timer = threading.Timer(max(0.0, seconds), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def remaining(self) -> float:
        """Seconds left, for the connect timeout; TimeoutError when none are."""
        left = self._end - time.monotonic()
        if self.expired or left <= 0:
            raise TimeoutError("the deadline has passed")
        return left

    def watch(self, sock: socket.socket) -> None:
        """Shut `sock` down at the deadline; TimeoutError when it has already passed."""
        with self._lock:
            if self.expired:
                raise TimeoutError("the deadline has passed")
            self._socket = sock

    def release(self) -> None:
        """Forget the socket before it is closed, so the timer never touches a reused descriptor."""
        with self._lock:
            self._socket = None

    def cancel(self) -> None:
        self._timer.cancel()
        self.release()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            if self._socket is not None:
                try:
                    # socket.socket's own shutdown: SSLSocket.shutdown would drop its TLS state
                    # under the reader's feet; this only wakes the blocked read.
                    socket.socket.shutdown(self._socket, socket.SHUT_RDWR)
                except OSError:
                    pass  # not connected any more: nothing is waiting on it
