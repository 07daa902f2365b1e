"""An append written straight into a file keeps every old chunk and adds the new ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sediment.format import Chunk, LayerFile, encode_layer
from tests.format.appending import appended
from tests.format.test_properties import layers, texts


def _streamed(base: LayerFile, new: list[Chunk], vecs: np.ndarray,
              metadata: dict[str, object] | None, directory: Path) -> bytes:
    return appended(base, new, vecs, metadata=metadata, directory=directory)


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layers(), st.data())
def test_a_streamed_append_holds_the_old_chunks_and_the_new(
        tmp_path: Path, layer: tuple[list[Chunk], np.ndarray, str, dict[str, object] | None],
        data: st.DataObject) -> None:
    chunks, matrix, etype, md = layer
    base = LayerFile.from_bytes(encode_layer(chunks, matrix, element_type=etype,
                                             dim=matrix.shape[1], metadata=md))
    taken = {c.id for c in chunks}
    ids = data.draw(st.lists(st.integers(1, 2**32 - 1).filter(lambda i: i not in taken),
                             unique=True, min_size=1, max_size=5))
    kinds = [c.kind for c in chunks] or ["note"]
    new = [Chunk(i, data.draw(st.one_of(st.sampled_from(kinds), texts)), data.draw(texts),
                 data.draw(st.sampled_from(["human", "mcp"])), 0.5, 7) for i in ids]
    vecs = np.asarray(data.draw(st.lists(st.floats(-4, 4, width=32),
                                         min_size=len(ids) * matrix.shape[1],
                                         max_size=len(ids) * matrix.shape[1])),
                      dtype=np.float32).reshape(len(ids), matrix.shape[1])
    meta = {"v": 1, "id_high_water": max(ids)}
    got = _streamed(base, new, vecs, meta, tmp_path)
    out = LayerFile.from_bytes(got)
    assert out.validate() == []
    assert list(out.chunks()) == list(base.chunks()) + new


def test_a_new_kind_beyond_the_latest_records_is_found_not_stored_twice(tmp_path: Path) -> None:
    """Kinds are looked up in the latest records first; one used only long ago is still
    reused from the dictionary."""
    n = 600
    chunks = [Chunk(i + 1, "rare" if i == 0 else "note", f"c{i}", "human", 1.0, 0)
              for i in range(n)]
    base = LayerFile.from_bytes(encode_layer(chunks, np.ones((n, 4), dtype=np.float32)))
    new = [Chunk(n + 1, "rare", "again", "human", 1.0, 0)]
    data = _streamed(base, new, np.ones((1, 4), dtype=np.float32), None, tmp_path)
    out = LayerFile.from_bytes(data)
    assert out.string_count == base.string_count + 1  # only the new content string
    assert out.records["kind"][-1] == out.records["kind"][0]
