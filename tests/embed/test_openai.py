from __future__ import annotations

import json
import socket
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import numpy as np
import pytest

from sediment.embed import Embedder, Matrix, OpenAIEmbedder, l2_normalize
from sediment.embed.openai import _retry_after
from sediment.errors import EmbeddingError, ValidationError

from .fake_http import FakeServer, Reply, Seen, embeddings_reply

pytestmark = pytest.mark.timeout(30)

DIM = 4


def make(server: FakeServer, **kw: object) -> OpenAIEmbedder:
    options: dict[str, object] = {"backoff": 0.001, "timeout": 5.0}
    options.update(kw)
    return OpenAIEmbedder(server.url, "test-model", DIM, **options)  # type: ignore[arg-type]


def expected(texts: list[str]) -> Matrix:
    raw = np.array([[len(t) + 1 + j for j in range(DIM)] for t in texts], dtype=np.float64)
    return l2_normalize(raw)


def test_success_with_batching(server: FakeServer) -> None:
    server.handler = lambda seen, n: embeddings_reply(seen.body["input"], DIM, shuffle=True)
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    with make(server, batch_size=2) as e:
        assert isinstance(e, Embedder)
        v = e.embed(texts)
    assert v.shape == (5, DIM) and v.dtype == np.float32
    np.testing.assert_allclose(v, expected(texts), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    assert [r.body["input"] for r in server.requests] == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]
    first = server.requests[0]
    assert first.path == "/v1/embeddings"
    assert first.body["model"] == "test-model"
    assert first.body["encoding_format"] == "float"
    assert "Authorization" not in first.headers


def test_empty_input_sends_nothing(server: FakeServer) -> None:
    with make(server) as e:
        assert e.embed([]).shape == (0, DIM)
    assert server.requests == []


def test_authorization_header_when_api_key_set(server: FakeServer) -> None:
    with make(server, api_key="sk-secret") as e:
        e.embed(["x"])
        assert "sk-secret" not in repr(e) and "sk-secret" not in json.dumps(e.metadata())
    assert server.requests[0].headers["Authorization"] == "Bearer sk-secret"


def test_429_then_success_honours_retry_after(server: FakeServer) -> None:
    def handler(seen: Seen, n: int) -> Reply:
        if n == 1:
            return Reply(429, b'{"error":"slow down"}', {"Retry-After": "0.3"})
        return embeddings_reply(seen.body["input"], DIM)

    server.handler = handler
    start = time.monotonic()
    with make(server) as e:
        v = e.embed(["hello"])
    elapsed = time.monotonic() - start
    assert len(server.requests) == 2
    assert elapsed >= 0.28
    np.testing.assert_allclose(v, expected(["hello"]), atol=1e-6)


def test_retry_after_is_capped(server: FakeServer) -> None:
    def handler(seen: Seen, n: int) -> Reply:
        if n == 1:
            return Reply(503, b"busy", {"Retry-After": "3600"})
        return embeddings_reply(seen.body["input"], DIM)

    server.handler = handler
    e = make(server)
    e.max_delay = 0.05
    start = time.monotonic()
    with e:
        e.embed(["x"])
    assert time.monotonic() - start < 5


def test_5xx_until_retries_exhausted(server: FakeServer) -> None:
    server.handler = lambda seen, n: Reply(500, b"internal kaboom")
    with make(server, max_retries=2) as e, pytest.raises(EmbeddingError) as info:
        e.embed(["x"])
    assert len(server.requests) == 3
    message = str(info.value)
    assert "3 attempts" in message and "500" in message and "kaboom" in message


def test_400_fails_immediately_with_status_and_excerpt(server: FakeServer) -> None:
    body = json.dumps({"error": {"message": "model 'nope' not found " + "x" * 1000}}).encode()
    server.handler = lambda seen, n: Reply(400, body)
    with make(server, max_retries=5) as e, pytest.raises(EmbeddingError) as info:
        e.embed(["x"])
    assert len(server.requests) == 1
    message = str(info.value)
    assert "HTTP 400" in message and "model 'nope' not found" in message
    assert len(message) < 400


def test_401_hints_at_the_key(server: FakeServer) -> None:
    server.handler = lambda seen, n: Reply(401, b'{"error":"bad key"}')
    with make(server, api_key="wrong") as e, pytest.raises(EmbeddingError, match="API key"):
        e.embed(["x"])
    assert len(server.requests) == 1


def test_malformed_json_reply(server: FakeServer) -> None:
    server.handler = lambda seen, n: Reply(200, b"<html>not json{")
    with make(server) as e, pytest.raises(EmbeddingError, match="not JSON"):
        e.embed(["x"])


def test_wrong_dimension(server: FakeServer) -> None:
    server.handler = lambda seen, n: embeddings_reply(seen.body["input"], DIM + 1)
    with make(server) as e, pytest.raises(EmbeddingError, match="5 dimensions, expected 4"):
        e.embed(["x"])


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ({"object": "list"}, "no 'data' list"),
        ([1, 2], "no 'data' list"),
        ({"data": []}, "0 embeddings for 2 texts"),
        ({"data": [{"index": 0, "embedding": [1, 2, 3, 4]}, {"embedding": [1, 2, 3, 4]}]},
         "valid 'index'"),
        ({"data": [{"index": 0, "embedding": [1, 2, 3, 4]}, {"index": 5, "embedding": [1] * 4}]},
         "valid 'index'"),
        ({"data": [{"index": 0, "embedding": [1, 2, 3, 4]}, {"index": 0, "embedding": [1] * 4}]},
         "appears twice"),
        ({"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": [1] * 4}]},
         "no 'embedding' list"),
        ({"data": [{"index": 0, "embedding": ["a", 2, 3, 4]}, {"index": 1, "embedding": [1] * 4}]},
         "non-numeric"),
    ],
)
def test_reply_shape_is_validated(server: FakeServer, body: object, match: str) -> None:
    server.handler = lambda seen, n: Reply(200, json.dumps(body).encode())
    with make(server) as e, pytest.raises(EmbeddingError, match=match):
        e.embed(["x", "y"])
    assert len(server.requests) == 1


def test_slow_server_times_out_after_retries(server: FakeServer) -> None:
    server.handler = lambda seen, n: Reply(delay=1.0, body=b"{}")
    start = time.monotonic()
    with make(server, timeout=0.1, max_retries=2, backoff=0.01) as e, pytest.raises(
        EmbeddingError, match=r"3 attempts.*Timeout"
    ):
        e.embed(["x"])
    assert time.monotonic() - start < 1.5
    assert len(server.requests) == 3


def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with OpenAIEmbedder(f"http://127.0.0.1:{port}/v1", "m", DIM, max_retries=1,
                        backoff=0.001, timeout=2.0) as e, pytest.raises(
        EmbeddingError, match=r"2 attempts.*ConnectError"
    ):
        e.embed(["x"])


def test_custom_transport_is_used() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        inputs = json.loads(request.content)["input"]
        data = [{"index": i, "embedding": [0.0, 3.0, 0.0, 4.0]} for i in range(len(inputs))]
        return httpx.Response(200, json={"data": data})

    with OpenAIEmbedder("https://api.example.com/v1/", "m", DIM,
                        transport=httpx.MockTransport(handle)) as e:
        v = e.embed(["a", "b"])
    assert str(seen[0].url) == "https://api.example.com/v1/embeddings"
    np.testing.assert_allclose(v, [[0, 0.6, 0, 0.8]] * 2, atol=1e-6)


def test_profile_and_metadata_never_leak_credentials() -> None:
    e = OpenAIEmbedder("https://user:pw@api.example.com:8443/v1?token=t", "text-embed", 1536,
                       api_key="sk-1")
    p = e.profile
    assert (p.backend, p.model, p.revision, p.dim, p.output_norm) == (
        "openai-compatible", "text-embed", None, 1536, "l2"
    )
    meta = e.metadata()
    assert meta["api_base"] == "https://api.example.com:8443/v1"
    assert "pw" not in json.dumps(meta) and "sk-1" not in json.dumps(meta)


@pytest.mark.parametrize(
    "kwargs",
    [{"base_url": "localhost:11434"}, {"dim": 0}, {"batch_size": 0}, {"timeout": 0},
     {"max_retries": -1}],
)
def test_rejects_bad_arguments(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"base_url": "http://localhost:11434/v1", "model": "m", "dim": 4}
    args.update(kwargs)
    with pytest.raises(ValidationError):
        OpenAIEmbedder(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize("url", ["http://attacker.example/v1", "http://10.0.0.5:8000/v1",
                                 "http://user:pw@192.168.1.2/v1", "http://[fe80::1]/v1",
                                 "http://localhost.attacker.example/v1"])
def test_plain_http_only_to_this_machine(url: str) -> None:
    with pytest.raises(ValidationError, match="plain http to another machine") as info:
        OpenAIEmbedder(url, "m", 4)
    assert "pw" not in str(info.value)


@pytest.mark.parametrize("url", ["http://localhost:11434/v1", "http://127.0.0.1:8000/v1",
                                 "http://127.9.9.9/v1", "http://[::1]:8080/v1",
                                 "http://LOCALHOST/v1", "https://api.example.com/v1"])
def test_https_anywhere_and_http_to_loopback_are_accepted(url: str) -> None:
    assert OpenAIEmbedder(url, "m", 4).url.endswith("/embeddings")


def test_retry_after_parsing() -> None:
    def parse(value: str) -> float | None:
        return _retry_after(httpx.Response(429, headers={"Retry-After": value}))

    assert parse("2") == 2.0
    assert parse("-5") == 0.0
    assert parse("soon") is None
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 20 < (parse(future) or 0) <= 31
    assert parse(format_datetime(datetime(2000, 1, 1, tzinfo=UTC), usegmt=True)) == 0.0
    assert _retry_after(httpx.Response(429)) is None
