"""The MiniLM embedder's working memory is bounded by a token budget, not the batch size."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sediment.embed import MiniLMEmbedder
from sediment.embed.minilm import MINILM_MAX_TOKENS, TOKEN_BUDGET, batch_bounds


@given(st.lists(st.integers(1, 600), max_size=300), st.integers(1, 80), st.integers(1, 5000))
def test_batches_cover_every_text_once_within_the_budget(
        lengths: list[int], rows: int, budget: int) -> None:
    sorted_lengths = np.sort(np.asarray(lengths, dtype=np.int64))
    bounds = batch_bounds(sorted_lengths, rows, budget)
    covered = [i for start, stop in bounds for i in range(start, stop)]
    assert covered == list(range(len(lengths)))
    for start, stop in bounds:
        size = stop - start
        assert 1 <= size <= rows
        assert size == 1 or size * int(sorted_lengths[stop - 1]) <= budget


@pytest.mark.slow
def test_long_texts_run_in_batches_within_the_token_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    shapes: list[tuple[int, int]] = []
    real = MiniLMEmbedder._run_batch

    def spy(self: MiniLMEmbedder, session: object, encodings: list[object]) -> object:
        shapes.append((len(encodings), max(len(e.ids) for e in encodings)))  # type: ignore[attr-defined]
        return real(self, session, encodings)

    monkeypatch.setattr(MiniLMEmbedder, "_run_batch", spy)
    texts = ["word " * 400 + str(i) for i in range(40)] + [f"short {i}" for i in range(40)]
    MiniLMEmbedder(batch_size=64).embed(texts)
    assert sum(n for n, _ in shapes) == len(texts)
    assert all(n * width <= TOKEN_BUDGET for n, width in shapes)
    assert max(width for _, width in shapes) == MINILM_MAX_TOKENS


PEAK_PROBE = """
import json, numpy as np
from sediment.embed import MiniLMEmbedder
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) * 1024
e = MiniLMEmbedder(batch_size=64)
e.embed(["warm up"])
loaded = hwm()
e.embed(["word " * 400 + str(i) for i in range(64)])
print(json.dumps({"loaded": loaded, "peak": hwm()}))
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_batch_of_long_texts_does_not_take_gigabytes(subprocess_env: dict[str, str]) -> None:
    """64 texts of 256 tokens took onnxruntime's arena to 2.4 GB above the loaded model;
    the token budget keeps it to a few hundred MB."""
    done = subprocess.run([sys.executable, "-c", PEAK_PROBE], capture_output=True, text=True,
                          env=subprocess_env, timeout=600, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["peak"] - got["loaded"] < 500 << 20
