"""`sediment index` on a real layer, with the threshold lowered so the test stays small."""

from __future__ import annotations

from pathlib import Path

from sediment.embed import HashEmbedder
from sediment.format import Chunk, encode_layer
from tests.conftest import Runner


def test_index_build_status_clean(sediment: Runner, tmp_path: Path) -> None:
    emb = HashEmbedder()
    texts = [f"note number {i} about topic {i % 17}" for i in range(600)]
    chunks = [Chunk(i + 1, "note", t, "human", 1.0, 0) for i, t in enumerate(texts)]
    md = {"v": 1, "embedding_profile": emb.profile.to_dict()}
    (tmp_path / "AGENTS.db").write_bytes(encode_layer(chunks, emb.embed(texts), metadata=md))
    status = sediment("index", "status", "--dir", str(tmp_path), "--json").json()
    assert status[0]["rows"] == 600 and status[0]["index"] is None
    assert not status[0]["needs_index"]
    small = sediment("index", "build", "--dir", str(tmp_path), "--json").json()
    assert small[0]["index"] is None
    built = sediment("index", "build", "--dir", str(tmp_path), "--min-rows", "100", "--json")
    assert built.code == 0, built.err
    path = Path(built.json()[0]["index"])
    assert path.exists() and path.name.startswith(".AGENTS.db.")
    status = sediment("index", "status", "--dir", str(tmp_path), "--json").json()[0]
    assert status["index"] == str(path) and status["indexed_rows"] == 600
    r = sediment("search", "topic 5", "--dir", str(tmp_path), "--exact", "--json")
    assert r.code == 0 and r.json()["results"]
    stale = path.with_name(path.name.replace(".AGENTS.db.", ".AGENTS.db.0000000000000000x"))
    stale.write_bytes(b"old")
    cleaned = sediment("index", "clean", "--dir", str(tmp_path), "--json").json()
    assert sorted(cleaned["removed"]) == [str(stale)] and path.exists()
    assert sediment("index", "clean", "--dir", str(tmp_path), "--all").code == 0
    assert not path.exists()
