"""Bad input through the Python API over PostgreSQL: refused with the field named, and
nothing stored that a pull could not write back as layer files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sediment
from sediment.pg import PgStore
from sediment.pg.transfer import pull
from sediment.store import LayerName, NewChunk
from tests.pg.team import seed_project


@pytest.mark.parametrize("author", ["bogus", "", None, 1, ["mcp"]])
def test_a_bad_author_is_refused_and_the_project_still_pulls(
        pg_url: str, tmp_path: Path, author: object) -> None:
    """The layer files refused ``author="bogus"`` while PostgreSQL stored it; afterwards
    every ``sediment pull`` of the project failed on that chunk."""
    seed_project(pg_url, tmp_path)
    with sediment.open(pg_url, embedder="hash") as store:
        with pytest.raises(sediment.ValidationError, match="author"):
            store.write("A note.", kind="note", confidence=0.5, author=author)  # type: ignore[arg-type]
        store.write("A good note.", kind="note", confidence=0.5)
    out = tmp_path / "pulled"
    out.mkdir()
    with PgStore(pg_url) as pg:
        pull(pg, out)
    assert (out / "AGENTS.local.db").is_file()


def test_the_backend_refuses_a_chunk_the_format_does_not_allow(pg_url: str,
                                                               tmp_path: Path) -> None:
    """The database append applies the format's rules, as the layer writer does."""
    seed_project(pg_url, tmp_path)
    with PgStore(pg_url) as pg:
        schema = pg.schema()
        assert schema is not None
        vec = np.zeros((1, schema.dim), dtype=np.float32)
        for bad, field in [(NewChunk("note", "x", "robot", 0.5), "author"),
                           (NewChunk("note", "a\ud800b", "mcp", 0.5), "content")]:
            with pytest.raises(sediment.ValidationError, match=field):
                pg.append(LayerName.LOCAL, [bad], vec, profile=schema.profile)
