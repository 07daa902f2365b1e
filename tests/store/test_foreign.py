"""Layer sets whose upper layers another implementation numbered (issue 13, item 6)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sediment.format import LayerFile
from sediment.store import LayerSet
from sediment.store.foreign import foreign_ids
from sediment.store.ids import WRITTEN_START
from tests.conftest import Runner, shared


@pytest.fixture
def reference(tmp_path: Path) -> Path:
    """The reference implementation's own layers: its user ids 1-4 are not base 1-4."""
    out = tmp_path / "ref"
    shutil.copytree(shared("interop", "agentsdb-reference"), out)
    for p in out.iterdir():
        p.chmod(0o644)
    return out


def test_the_reference_set_is_recognised(reference: Path) -> None:
    notice = foreign_ids(LayerSet.from_directory(reference))
    assert notice is not None
    found = {(c.layer.value, c.lower.value): c.ids for c in notice.collisions}
    assert found[("user", "base")] == (1, 2, 3, 4)
    assert found[("delta", "base")] == (4, 5)
    assert "--fresh-ids" in notice.message


def test_layers_and_explain_say_so_once(sediment: Runner, reference: Path) -> None:
    r = sediment("layers", "--dir", str(reference))
    assert r.code == 0, r.err
    assert r.err.count("warning: ids collide across layers") == 1
    assert "user reuses 4 id(s) of base (1, 2, 3, 4)" in r.err
    j = sediment("layers", "--dir", str(reference), "--json").json()
    assert {(c["layer"], c["hides"]) for c in j["foreign_ids"]["collisions"]} == {
        ("user", "base"), ("user", "delta"), ("delta", "base")}
    query = ("search", "embedding helpers", "--dir", str(reference), "--mode", "lexical")
    human = sediment(*query, "--explain")
    assert human.code == 0, human.err
    assert human.err.count("warning: ids collide across layers") == 1
    j = sediment(*query, "--explain", "--json").json()
    assert j["foreign_ids"]["collisions"]
    plain = sediment(*query)
    assert "collide" not in plain.err


def test_a_set_sediment_wrote_raises_no_notice(sediment: Runner, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("# A\n\nThe deploy job runs nightly.\n")
    assert sediment("compile", "--root", str(root), "--include", "**/*.md", "--no-kcp",
                    "--out", str(root / "AGENTS.db")).code == 0
    w = sediment("write", "--dir", str(root), "--scope", "delta", "--kind", "note",
                 "--content", "Deploys moved to 2am.", "--confidence", "0.6", "--json")
    assert w.code == 0, w.err
    r = sediment("promote", "--dir", str(root), "--ids", str(w.json()["id"]), "--yes")
    assert r.code == 0, r.err
    j = sediment("layers", "--dir", str(root), "--json").json()
    assert j["foreign_ids"] is None


def test_import_into_fresh_ids_fixes_the_set(sediment: Runner, reference: Path) -> None:
    for layer in ("user", "delta"):
        name = f"AGENTS.{layer}.db"
        before = [(c.kind, c.content) for c in LayerFile.open(reference / name).chunks()]
        out = reference / f"{layer}.jsonl"
        assert sediment("export", str(reference / name), "--out", str(out)).code == 0
        (reference / name).rename(reference / f"{name}.orig")
        r = sediment("import", str(out), "--into", layer, "--dir", str(reference),
                     "--fresh-ids", "--json")
        assert r.code == 0, r.err
        assert min(r.json()["ids"]) >= WRITTEN_START
        after = LayerFile.open(reference / name)
        assert [(c.kind, c.content) for c in after.chunks()] == before
    assert foreign_ids(LayerSet.from_directory(reference)) is None
    delta = {c.kind: c for c in LayerFile.open(reference / "AGENTS.delta.db").chunks()}
    note = next(c for c in LayerFile.open(reference / "AGENTS.delta.db").chunks()
                if c.content == "test")
    assert delta["tombstone"].sources == (note.id,)
    j = sediment("search", "MIT License permission", "--dir", str(reference), "--mode",
                 "lexical", "--json", "-k", "3").json()
    assert any(h["layer"] == "base" and h["id"] == 4 for h in j["results"])
