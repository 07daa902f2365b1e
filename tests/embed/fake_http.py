"""A real HTTP server on 127.0.0.1 that plays an OpenAI-compatible embeddings endpoint."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """What the fake server answers: status, headers, raw body, and a delay before answering."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    """One request the fake server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


Handler = Callable[[Seen, int], Reply]


def embeddings_reply(inputs: list[str], dim: int, *, shuffle: bool = False) -> Reply:
    """A valid OpenAI-style reply whose vectors depend on the text (length-based, unnormalised)."""
    data = [
        {"object": "embedding", "index": i, "embedding": [len(t) + 1.0 + j for j in range(dim)]}
        for i, t in enumerate(inputs)
    ]
    if shuffle:
        data.reverse()
    body = {"object": "list", "data": data, "model": "m", "usage": {"prompt_tokens": 1}}
    return Reply(body=json.dumps(body).encode())


class FakeServer:
    """ThreadingHTTPServer on 127.0.0.1 whose replies come from a test-supplied handler."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.handler: Handler = lambda seen, n: embeddings_reply(seen.body["input"], 4)
        self._lock = threading.Lock()
        owner = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                seen = Seen(self.path, dict(self.headers.items()), json.loads(raw or b"{}"))
                with owner._lock:
                    owner.requests.append(seen)
                    n = len(owner.requests)
                reply = owner.handler(seen, n)
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply.body)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class _Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass

        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)
