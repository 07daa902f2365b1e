"""A mapped layer file truncated and rewritten in place (``cp backup.db AGENTS.db``) does not
kill the process that mapped it (Linux read leases; src/sediment/format/mapguard.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux leases")]

SCRIPT = textwrap.dedent("""
    import subprocess, sys
    from pathlib import Path
    import numpy as np
    from sediment.embed import HashEmbedder
    from sediment.format import Chunk, LayerFile, encode_layer
    from sediment.format import mapguard

    emb = HashEmbedder()
    def layer(n):
        docs = [f"chunk {i} of the layer" for i in range(n)]
        chunks = [Chunk(i, "canonical", t, "human", 1.0, 0, ("a.md:1",))
                  for i, t in enumerate(docs, 1)]
        return encode_layer(chunks, emb.embed(docs),
                            metadata={"v": 1, "embedding_profile": emb.profile.to_dict()})
    path, small = Path(sys.argv[1]), Path(sys.argv[2])
    path.write_bytes(layer(3000))
    small.write_bytes(layer(3))
    if sys.argv[3] == "guard":
        assert mapguard.enable()
    f = LayerFile.open(path)
    matrix = f.embeddings
    before = float(np.abs(matrix).sum())
    contents = [c.content for c in f.chunks()][-1]
    subprocess.run(["cp", str(small), str(path)], check=True, timeout=60)
    assert path.stat().st_size == small.stat().st_size
    print(before == float(np.abs(matrix).sum()), contents == "chunk 2999 of the layer",
          mapguard.protected_count())
    g = LayerFile.open(path)
    print(len(g.ids), mapguard.protected_count())
""")


def run(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "AGENTS.db"),
                           str(tmp_path / "backup.db"), mode],
                          capture_output=True, text=True, timeout=100)


def test_a_guarded_map_keeps_its_snapshot_when_the_file_is_copied_over(
        tmp_path: Path) -> None:
    p = run(tmp_path, "guard")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["True True 0", "3 1"]


def test_without_the_guard_the_same_copy_is_a_sigbus(tmp_path: Path) -> None:
    """What the guard prevents (and why only long-running processes need it)."""
    p = run(tmp_path, "plain")
    assert p.returncode == -7, (p.returncode, p.stdout, p.stderr)


def test_a_file_open_for_writing_elsewhere_is_a_clean_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sediment.errors import FormatError
    from sediment.format import LayerFile, mapguard
    from tests.mcp.conftest import make_store

    path = make_store(tmp_path / "s") / "AGENTS.db"
    monkeypatch.setitem(mapguard._state, "enabled", mapguard.enabled())  # restored after
    assert mapguard.enable()
    with path.open("r+b"), pytest.raises(FormatError, match="open for writing by another "
                                                            "process"):
        LayerFile.open(path)
    LayerFile.open(path)
