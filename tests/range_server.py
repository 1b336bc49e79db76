"""A file server on 127.0.0.1 for download tests: it honours HTTP Range requests (206 with
Content-Range), and can cut the connection after some bytes or ignore Range (200 with the whole
file), or hold after some bytes until the test releases it (``hold_after``: ``held`` is set
once those bytes are sent, the rest follows ``release.set()``); it records the Range header of
every request it saw."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NAME = "tiny.gguf"


@dataclass
class FileServer:
    """What the server sends and what it saw: ``drop_after`` bytes then the connection is cut
    (once), ``ignore_range`` answers 200 with the whole file to a Range request."""

    data: bytes
    drop_after: int | None = None
    ignore_range: bool = False
    hold_after: int | None = None  # bytes of the file sent before waiting for ``release`` (once)
    cut_on_release: bool = False  # after ``release``, close the connection instead of sending the rest
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    ranges: list[str | None] = field(default_factory=list)
    url: str = ""


@contextmanager
def file_server(data: bytes) -> Iterator[FileServer]:
    state = FileServer(data)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            asked = self.headers.get("Range")
            state.ranges.append(asked)
            body, start = state.data, 0
            if asked and not state.ignore_range:
                start = int(asked.removeprefix("bytes=").split("-")[0])
                if start >= len(body):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(body)}")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            payload = body[start:]
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            try:
                if state.drop_after is not None:
                    cut, state.drop_after = state.drop_after, None
                    self.wfile.write(payload[:cut])
                    self.close_connection = True
                    return
                if state.hold_after is not None and start < state.hold_after:
                    first = payload[: state.hold_after - start]
                    state.hold_after = None
                    self.wfile.write(first)
                    self.wfile.flush()
                    state.held.set()
                    state.release.wait()
                    if state.cut_on_release:
                        self.close_connection = True
                        return
                    payload = payload[len(first) :]
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client cancelled
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/models/{NAME}"
    try:
        yield state
    finally:
        state.release.set()  # a handler still holding lets go
        httpd.shutdown()
        httpd.server_close()
