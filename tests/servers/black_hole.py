"""A TCP server on 127.0.0.1 that accepts connections and never answers.

It stands for a Redis or broker that hangs: the connection opens at once, and
every command then waits for a reply that never comes. What it is sent is read
and thrown away (so the sender never blocks on a full buffer); connections stay
open until the server stops.
"""

from __future__ import annotations

import selectors
import socket
import threading
from contextlib import contextmanager


class BlackHole:
    """Accepts every connection, reads and drops what it is sent, answers nothing."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="black-hole", daemon=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> BlackHole:
        self._thread.start()
        return self

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ)
        try:
            while not self._stop.is_set():
                for key, _ in selector.select(timeout=0.1):
                    if key.fileobj is self._listener:
                        try:
                            conn, _ = self._listener.accept()
                        except BlockingIOError:
                            continue
                        self.accepted += 1
                        conn.setblocking(False)
                        selector.register(conn, selectors.EVENT_READ)
                        continue
                    try:
                        data = key.fileobj.recv(65536)
                    except BlockingIOError:
                        continue
                    except ConnectionError:
                        data = b""
                    if not data:  # the client went away
                        selector.unregister(key.fileobj)
                        key.fileobj.close()
        finally:
            for key in list(selector.get_map().values()):
                key.fileobj.close()
            selector.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@contextmanager
def black_hole():
    """A started :class:`BlackHole`, always stopped."""
    server = BlackHole().start()
    try:
        yield server
    finally:
        server.stop()
