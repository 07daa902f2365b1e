"""Embedder for OpenAI-compatible ``/v1/embeddings`` servers (OpenAI, Ollama, vLLM, LM Studio).

Remote servers fail in ordinary ways (rate limits, restarts, slow replies) that must not lose
an ingest, so transient failures are retried with exponential backoff; permanent ones (bad
key, unknown model) fail at once with the server's own words in the message.
"""

from __future__ import annotations

import email.utils
import ipaddress
import math
import random
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
from numpy.typing import NDArray

from sediment.embed.base import Matrix, check_texts, empty_matrix, l2_normalize
from sediment.embed.profile import EmbeddingProfile
from sediment.errors import EmbeddingError, ValidationError

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAIEmbedder"]

_EXCERPT_CHARS = 200


class OpenAIEmbedder:
    """Embeds through ``POST {base_url}/embeddings`` of an OpenAI-compatible server.

    ``base_url`` is the API root including its version, e.g. ``https://api.openai.com/v1`` or
    ``http://localhost:11434/v1`` (Ollama). Texts are sent ``batch_size`` at a time. HTTP 429,
    5xx, connect/read timeouts and dropped connections are retried up to ``max_retries`` times
    after the first attempt, waiting ``backoff * 2**attempt`` seconds (with jitter) or the
    server's ``Retry-After``, both capped at :attr:`max_delay`. Other 4xx replies fail at once.

    Returned vectors are L2-normalised here (``output_norm`` is ``"l2"``) whatever the server
    does, so scores are comparable across providers that do and do not normalise. The reply
    must carry exactly ``dim`` numbers per text: this class does not send the ``dimensions``
    parameter, which not every server accepts.
    """

    #: Upper bound in seconds on any single wait between attempts.
    max_delay: float = 30.0

    def __init__(
        self,
        base_url: str,
        model: str,
        dim: int,
        api_key: str | None = None,
        batch_size: int = 128,
        timeout: float = 30.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValidationError(
                f"base_url must be an http(s) URL like http://localhost:11434/v1, got {base_url!r}"
            )
        if parts.scheme == "http" and not _loopback(parts.hostname or ""):
            raise ValidationError(
                f"base_url http://{parts.hostname}/... is plain http to another machine: every "
                "embedded text and the API key would cross the network unencrypted; use "
                "https, or plain http only to this machine (localhost, 127.0.0.1, ::1)")
        _positive("batch_size", batch_size)
        _positive("timeout", timeout)
        _positive("dim", dim)
        if max_retries < 0 or backoff < 0:
            raise ValidationError("max_retries and backoff must not be negative")
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/embeddings"
        self.model = model
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self._api_key = api_key
        self._transport = transport
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self._profile = EmbeddingProfile(
            backend="openai-compatible", model=model, revision=None, dim=dim, output_norm="l2"
        )

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(base_url={self.base_url!r}, model={self.model!r}, dim={self.dim})"

    @property
    def dim(self) -> int:
        return self._profile.dim

    @property
    def profile(self) -> EmbeddingProfile:
        return self._profile

    def metadata(self) -> dict[str, Any]:
        """Provider and API base; credentials (the key, any user:password or query) omitted."""
        p = urlsplit(self.base_url)
        host = p.hostname or ""
        netloc = f"{host}:{p.port}" if p.port is not None else host
        return {
            "provider": "openai-compatible",
            "api_base": urlunsplit((p.scheme, netloc, p.path, "", "")),
            "model": self.model,
        }

    def embed(self, texts: Sequence[str]) -> Matrix:
        items = check_texts(texts)
        if not items:
            return empty_matrix(self.dim)
        out = np.empty((len(items), self.dim), dtype=np.float32)
        for start in range(0, len(items), self.batch_size):
            batch = items[start : start + self.batch_size]
            out[start : start + len(batch)] = self._embed_batch(batch)
        return out

    def close(self) -> None:
        """Close pooled connections; the embedder reopens them if used again."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _embed_batch(self, batch: list[str]) -> Matrix:
        payload = {"model": self.model, "input": batch, "encoding_format": "float"}
        reply = self._post(payload)
        return l2_normalize(self._parse(reply, len(batch)))

    def _post(self, payload: dict[str, Any]) -> httpx.Response:
        import httpx  # on first use: a process that never embeds over HTTP does not load it

        retryable = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
        client = self._get_client()
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                response = client.post(self.url, json=payload)
            except retryable as exc:
                failure = f"{type(exc).__name__}: {exc}"
            except httpx.HTTPError as exc:
                raise EmbeddingError(f"POST {self.url} failed: {exc}") from exc
            else:
                status = response.status_code
                if 200 <= status < 300:
                    return response
                failure = f"HTTP {status}: {_excerpt(response)}"
                if status != 429 and status < 500:
                    hint = " (check the API key)" if status in (401, 403) else ""
                    raise EmbeddingError(f"POST {self.url} answered {failure}{hint}")
                retry_after = _retry_after(response)
            if attempt >= self.max_retries:
                raise EmbeddingError(
                    f"POST {self.url} failed after {attempt + 1} attempts; last error {failure}"
                )
            time.sleep(self._delay(attempt, retry_after))
            attempt += 1

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_delay)
        base = min(self.backoff * 2.0**attempt, self.max_delay)
        return base * (0.5 + random.random() / 2)

    def _parse(self, response: httpx.Response, expected: int) -> NDArray[np.float64]:
        where = f"reply from {self.url}"
        try:
            body = response.json()
        except ValueError as exc:
            raise EmbeddingError(f"{where} is not JSON: {_excerpt(response)}") from exc
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise EmbeddingError(f"{where} has no 'data' list: {_excerpt(response)}")
        if len(data) != expected:
            raise EmbeddingError(f"{where} has {len(data)} embeddings for {expected} texts")
        out = np.empty((expected, self.dim), dtype=np.float64)
        seen: set[int] = set()
        for pos, item in enumerate(data):
            index = item.get("index") if isinstance(item, dict) else None
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < expected:
                raise EmbeddingError(f"{where}: data[{pos}] has no valid 'index' (got {index!r})")
            if index in seen:
                raise EmbeddingError(f"{where}: index {index} appears twice")
            seen.add(index)
            out[index] = self._vector(item.get("embedding"), f"{where}: data[{pos}]")
        return out

    def _vector(self, raw: object, where: str) -> NDArray[np.float64]:
        if not isinstance(raw, list):
            raise EmbeddingError(f"{where} has no 'embedding' list")
        if len(raw) != self.dim:
            raise EmbeddingError(
                f"{where} has an embedding of {len(raw)} dimensions, expected {self.dim} "
                f"(is model {self.model!r} configured with the right dim?)"
            )
        try:
            vec = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(f"{where} has a non-numeric embedding") from exc
        if vec.shape != (self.dim,) or not np.isfinite(vec).all():
            raise EmbeddingError(f"{where} has a non-numeric or non-finite embedding")
        return vec

    def _get_client(self) -> httpx.Client:
        import httpx

        with self._lock:
            if self._client is None:
                headers = {"Accept": "application/json"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                self._client = httpx.Client(
                    timeout=self.timeout, headers=headers, transport=self._transport
                )
            return self._client


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not value > 0 or not math.isfinite(value):
        raise ValidationError(f"{name} must be positive, got {value!r}")


def _excerpt(response: httpx.Response) -> str:
    text = " ".join(response.text.split())
    if len(text) > _EXCERPT_CHARS:
        text = text[:_EXCERPT_CHARS] + "..."
    return text or "(empty body)"


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asked us to wait: delta-seconds or an HTTP date (RFC 9110 10.2.3)."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)
