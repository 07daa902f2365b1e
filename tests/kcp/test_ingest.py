"""Ingestion: the plan a compile follows, and the chunks it adds to a real layer file."""

from __future__ import annotations

import json
from pathlib import Path

from sediment.kcp import INTENT_KIND, UNIT_KIND, KcpIndex, plan_kcp
from sediment.store import LayerName
from tests.kcp.helpers import manifest, unit, write_tree
from tests.kcp.project import build


def test_the_plan_lists_unit_files_per_manifest(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {
        "knowledge.yaml": manifest(unit("a", path="docs/a.md"), unit("gone")),
        "docs/a.md": "# A\n",
        "svc/knowledge.yaml": manifest(unit("a", path="README.md"), project="svc"),
        "svc/README.md": "# Svc\n",
        "bad/knowledge.yaml": manifest(unit("x", scope="universe")),
    })
    plan = plan_kcp(root)
    assert plan.manifest_paths == ["knowledge.yaml", "svc/knowledge.yaml"]
    assert plan.files == ["docs/a.md", "svc/README.md"]
    assert [(u.unit.id, u.path, u.file) for u in plan.manifests[0].units] == [
        ("a", "docs/a.md", "docs/a.md"), ("gone", "docs/gone.md", None)]
    assert any(w.startswith("bad/knowledge.yaml: invalid, not ingested") for w in plan.warnings)
    assert any("unit.path.missing" in w for w in plan.warnings)


def test_symlinked_unit_files_are_given_by_their_real_path(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {"knowledge.yaml": manifest(unit("a", path="CLAUDE.md")),
                                 "AGENTS.md": "# Agents\n"})
    (root / "CLAUDE.md").symlink_to(root / "AGENTS.md")
    assert plan_kcp(root).files == ["AGENTS.md"]


def test_annotations_are_intent_chunks_and_unit_events(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {
        "docs/knowledge.yaml": manifest(
            unit("a", path="a.md", triggers=["alpha"], validated="2026-01-02"),
            unit("b", path="b.md", depends_on=["a"], supersedes="old"),
            relationships=[{"from": "b", "to": "a", "type": "supersedes"}]),
        "docs/a.md": "# A\n", "docs/b.md": "# B\n",
        "llms.txt": "# P\n> knowledge: /docs/knowledge.yaml\n"})
    plan = plan_kcp(root)
    chunks = plan.annotations({"docs/a.md": [1, 2], "docs/b.md": [3]}, 10,
                              created_at_ms={"docs/knowledge.yaml": 77})
    assert [(c.id, c.kind) for c in chunks] == [(10, INTENT_KIND), (11, UNIT_KIND),
                                                (12, INTENT_KIND), (13, UNIT_KIND)]
    assert chunks[0].content == "What does a explain?"
    assert chunks[0].sources == ("docs/a.md:1",)
    assert chunks[1].sources == (10, 1, 2) and chunks[3].sources == (12, 3)
    assert {c.created_at_ms for c in chunks} == {77}
    event = json.loads(chunks[3].content)
    assert event == {
        "event": "kcp_unit", "manifest": "docs/knowledge.yaml", "project": "demo",
        "kcp_version": "0.14", "unit": "b", "path": "docs/b.md", "intent": "What does b explain?",
        "scope": "global", "audience": ["developer", "agent"], "triggers": [],
        "validated": None, "supersedes": ["old", "a"], "depends_on": ["a"],
        "kind": "knowledge", "deprecated": False, "intent_chunk": 12}
    assert chunks[3].content == plan.annotations(
        {"docs/a.md": [1, 2], "docs/b.md": [3]}, 10)[3].content


def test_a_compiled_layer_carries_units_the_index_reads_back(tmp_path: Path) -> None:
    ls, _ = build(tmp_path)
    base = ls.layer(LayerName.BASE)
    assert base is not None
    f = base.file
    assert f.validate() == []
    kinds = [c.kind for c in f.chunks()]
    assert kinds.count(INTENT_KIND) == 5 and kinds.count(UNIT_KIND) == 5
    index = KcpIndex.from_layerset(ls)
    assert sorted(k[1] for k in index.units) == ["auth", "cluster", "deploy-v2", "deploy-v3",
                                                  "overview"]
    v3 = index.units[("knowledge.yaml", "deploy-v3")]
    assert v3.triggers == ("rollout", "release train") and v3.depends_on == ("cluster",)
    assert v3.intent_chunk == v3.chunk_ids[0]
    assert f.get(v3.intent_chunk).kind == INTENT_KIND  # type: ignore[union-attr]
    doc = f.get(v3.chunk_ids[1])
    assert doc is not None and doc.sources == ("docs/deploy-v3.md:1",)
    assert index.is_superseded(("knowledge.yaml", "deploy-v2"))
    assert not index.is_superseded(("knowledge.yaml", "deploy-v3"))
    assert [u.id for u in index.load_order([v3.key])] == ["overview", "cluster", "deploy-v3"]
