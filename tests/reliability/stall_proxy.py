"""A TCP proxy on 127.0.0.1 that forwards to a real server until told to stall: from then on
it accepts connections and swallows bytes in both directions, answering nothing (a server or
network that stops responding without closing anything)."""

from __future__ import annotations

import socket
import threading


class StallingProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.stalled = threading.Event()
        self._closing = threading.Event()
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.1)
        self._sockets: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def stall(self) -> None:
        self.stalled.set()

    def close(self) -> None:
        self._closing.set()
        self._thread.join()
        for sock in self._sockets:
            try:
                sock.close()
            except OSError:
                pass
        self._listener.close()

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                continue
            self._sockets.append(client)
            if self.stalled.is_set():
                threading.Thread(target=self._swallow, args=(client,), daemon=True).start()
                continue
            upstream = socket.create_connection(self.upstream)
            self._sockets.append(upstream)
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _swallow(self, sock: socket.socket) -> None:
        try:
            while not self._closing.is_set() and sock.recv(65536):
                pass
        except OSError:
            pass

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while not self._closing.is_set():
                data = source.recv(65536)
                if not data:
                    target.shutdown(socket.SHUT_WR)
                    return
                if not self.stalled.is_set():  # stalled: bytes go nowhere, nothing answers
                    target.sendall(data)
        except OSError:
            pass
