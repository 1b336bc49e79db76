"""A JSON-over-HTTP stand-in, on 127.0.0.1, for a service the project does not ship (an
OpenAI-compatible embedding server, a /rerank endpoint): the test supplies what each POST
answers, this module the server around it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (path, JSON body, headers) -> (HTTP status, JSON payload); it may block (a request held open)
Answer = Callable[[str, Any, Mapping[str, str]], tuple[int, Any]]


@contextmanager
def json_server(answer: Answer) -> Iterator[str]:
    """Serve ``answer`` on a free port of 127.0.0.1; yields the base URL (``…/v1``)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, payload = answer(self.path, body, self.headers)
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
