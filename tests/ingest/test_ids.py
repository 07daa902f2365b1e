"""Ids of a recompiled base: kept for unchanged chunks, never those writers give."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sediment.embed import HashEmbedder
from sediment.errors import ValidationError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.ingest.compile import CompileOptions, compile_layer
from sediment.ingest.ids import CompiledIds
from sediment.store.ids import ID_RANGES, LEGACY_COMPILE_START, WRITTEN_START
from tests.conftest import Runner

GUIDE = "# Guide\n\nInstall with pip.\n\n## Usage\n\nRun the tool.\n\n## Limits\n\nNone known.\n"


def docs(root: Path, **files: str) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def compile_to(root: Path, out: Path, previous: Path | None = None) -> dict[str, int]:
    """Compile every .md under ``root``; content -> id of the result."""
    compile_layer(CompileOptions(root=root, include=["**/*.md"], out=out, previous=previous),
                  HashEmbedder())
    return {c.content: c.id for c in LayerFile.open(out).chunks()}


def test_unchanged_chunks_keep_their_ids_and_new_ones_go_above(tmp_path: Path) -> None:
    root = docs(tmp_path / "repo", **{"b.md": GUIDE, "c.md": "# C\n\nSee also.\n"})
    out = tmp_path / "AGENTS.db"
    first = compile_to(root, out)
    assert sorted(first.values()) == list(range(1, len(first) + 1))
    docs(root, **{"a.md": "# A\n\nA new file sorted first.\n",
                  "b.md": GUIDE.replace("## Limits", "## Config\n\nSet X.\n\n## Limits")})
    second = compile_to(root, out)
    for content, cid in first.items():
        assert second[content] == cid, content
    new = {c: i for c, i in second.items() if c not in first}
    assert set(new) == {"# A\n\nA new file sorted first.", "## Config\n\nSet X."}
    assert min(new.values()) > max(first.values()) and max(new.values()) < WRITTEN_START
    f = LayerFile.open(out)
    assert f.metadata is not None and f.metadata["id_high_water"] == max(second.values())


def test_a_dropped_id_is_never_given_to_other_content(tmp_path: Path) -> None:
    root = docs(tmp_path / "repo", **{"a.md": "# A\n\nOne.\n\n## B\n\nTwo.\n"})
    out = tmp_path / "AGENTS.db"
    first = compile_to(root, out)
    docs(root, **{"a.md": "# A\n\nOne.\n"})
    compile_to(root, out)
    docs(root, **{"a.md": "# A\n\nOne.\n\n## C\n\nThree.\n"})
    third = compile_to(root, out)
    assert third["## C\n\nThree."] > max(first.values())


def test_same_sources_and_previous_base_give_the_same_bytes(tmp_path: Path) -> None:
    root = docs(tmp_path / "repo", **{"a.md": GUIDE})
    previous = tmp_path / "previous.db"
    compile_to(root, previous)
    docs(root, **{"a.md": "# Intro\n\nNew first section.\n\n" + GUIDE})
    for name in ("laptop", "ci"):
        (tmp_path / name).mkdir()
        shutil.copy(previous, tmp_path / name / "AGENTS.db")
    (tmp_path / "laptop" / "AGENTS.local.db").write_bytes(b"not even a layer")
    compile_to(root, tmp_path / "laptop" / "AGENTS.db")
    compile_to(root, tmp_path / "ci" / "AGENTS.db")
    compile_to(root, tmp_path / "elsewhere.db", previous=previous)
    laptop = (tmp_path / "laptop" / "AGENTS.db").read_bytes()
    assert laptop == (tmp_path / "ci" / "AGENTS.db").read_bytes()
    assert laptop == (tmp_path / "elsewhere.db").read_bytes()


def test_a_base_from_before_the_id_ranges_numbers_new_chunks_clear_of_old_writes(
        tmp_path: Path) -> None:
    """Writers used to number from just above the base: new compiled ids keep clear."""
    emb = HashEmbedder()
    out = tmp_path / "AGENTS.db"
    old = [Chunk(1, "canonical", "# A\n\nOne.", "human", 1.0, 0, ("a.md:1",))]
    out.write_bytes(encode_layer(old, emb.embed([c.content for c in old]),
                                 metadata={"v": 1, "id_high_water": 1}))
    root = docs(tmp_path / "repo", **{"a.md": "# A\n\nOne.\n\n## B\n\nTwo.\n"})
    ids = compile_to(root, out)
    assert ids["# A\n\nOne."] == 1
    assert ids["## B\n\nTwo."] == LEGACY_COMPILE_START + 1


def test_an_unreadable_previous_base_is_a_clear_error(tmp_path: Path) -> None:
    root = docs(tmp_path / "repo", **{"a.md": GUIDE})
    out = tmp_path / "AGENTS.db"
    out.write_bytes(b"garbage")
    with pytest.raises(ValidationError, match="previous base cannot be read"):
        compile_to(root, out)


def test_a_recompile_does_not_hide_base_chunks_behind_written_ones(
        sediment: Runner, tmp_path: Path) -> None:
    """The audit's case: after a recompile, local ids used to collide with new base chunks."""
    root = docs(tmp_path / "repo", **{"a.md": "# Alpha\n\nThe alpha service.\n"})

    def compile_base() -> None:
        r = sediment("compile", "--root", str(root), "--include", "**/*.md", "--no-kcp",
                     "--out", str(root / "AGENTS.db"))
        assert r.code == 0, r.err

    compile_base()
    w = sediment("write", "--dir", str(root), "--kind", "note", "--content",
                 "Local note about deployment.", "--confidence", "0.5", "--json")
    assert w.code == 0, w.err
    note_id = w.json()["id"]
    assert note_id >= WRITTEN_START
    docs(root, **{"b.md": "# Beta\n\nThe beta service handles billing.\n",
                  "c.md": "# Gamma\n\nThe gamma service.\n"})
    compile_base()
    base_ids = {c.id for c in LayerFile.open(root / "AGENTS.db").chunks()}
    assert note_id not in base_ids
    r = sediment("search", "beta billing", "--dir", str(root), "--json", "-k", "5")
    assert r.code == 0, r.err
    hits = r.json()["results"]
    assert any("beta service" in h["content"] for h in hits)
    assert all(not h.get("conflicts") for h in hits)


PIECES = st.lists(st.tuples(st.sampled_from(["a.md", "b.md", "d/c.md"]),
                            st.sampled_from(["one", "two", "three", "four", "five"])),
                  max_size=12)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=PIECES, after=PIECES)
def test_ids_property(tmp_path_factory: pytest.TempPathFactory,
                      before: list[tuple[str, str]], after: list[tuple[str, str]]) -> None:
    """Kept chunks keep their ids, ids are unique, new ids lie above the old high water."""
    path = tmp_path_factory.mktemp("ids") / "AGENTS.db"
    first = CompiledIds(None)
    old = [Chunk(first.allocate(c, (f"{p}:{n}",)), "canonical", c, "human", 1.0, 0,
                 (f"{p}:{n}",)) for n, (p, c) in enumerate(before, 1)]
    path.write_bytes(encode_layer(old, np.zeros((len(old), 2), dtype=np.float32), metadata={
        "v": 1, "id_high_water": first.high_water, "id_ranges": ID_RANGES}))
    ids = CompiledIds(path)
    new = [ids.allocate(c, (f"{p}:{n + 7}",)) for n, (p, c) in enumerate(after, 1)]
    assert len(set(new)) == len(new)
    assert all(0 < i < WRITTEN_START for i in new)
    pool: dict[tuple[str, str], list[int]] = {}
    for chunk, key in zip(old, before, strict=True):
        pool.setdefault(key, []).append(chunk.id)
    for key, cid in zip(after, new, strict=True):
        expected = pool.get(key)
        if expected:
            assert cid == expected.pop(0)
        else:
            assert cid > first.high_water
