"""Memories survive export/import and compaction with their versions, contexts,
relationships and use counts; other readers of the layers never see them by accident."""

from __future__ import annotations

from pathlib import Path

import pytest

from sediment.embed import HashEmbedder
from sediment.errors import NotFoundError, ValidationError
from sediment.format import LayerFile
from sediment.memory import FileMemoryStore, MemoryService
from sediment.ops.requests import SearchParams
from sediment.ops.service import ContextService
from sediment.review.compact import compact
from sediment.review.jsonl import export_lines, import_file
from sediment.store import LayerName, LayerSet
from tests.mcp.conftest import make_store


def _export_text(path: Path) -> str:
    return "".join(line + "\n" for line in export_lines(path))



def service_over(layers: LayerSet, data: Path) -> MemoryService:
    emb = HashEmbedder()
    store = FileMemoryStore(layers, data, profile=emb.profile.to_dict(),
                            dim=emb.profile.dim, embedder_metadata=emb.metadata())
    return MemoryService(store, emb, dedup_threshold=0.7)


def history(svc: MemoryService, actor: str, mid: str) -> tuple[list[str], str | None,
                                                              list[str], int]:
    shown = svc.show(actor, mid)
    return ([v["id"] for v in shown["versions"]], shown["memory"]["context"],
            shown["related_to"], shown["memory"]["use_count"])


def test_export_and_import_keep_memory_state(tmp_path: Path) -> None:
    first = make_store(tmp_path / "one")
    svc = service_over(LayerSet.from_directory(first), tmp_path / "data")
    a = svc.save("alice", "The worker pool has 8 threads", "fact", scope="project",
                 context="perf", related_to=["docs/pool.md:3", "pool-unit"])
    b = svc.save("alice", "The worker pool has 16 threads", "correction", scope="project")
    assert b["status"] == "updated" and b["superseded_id"] == a["id"]
    svc.recall("alice", "worker pool threads")
    svc.close()
    before = history(svc, "alice", b["id"])
    assert before == ([b["id"], a["id"]], "perf", ["docs/pool.md:3", "kcp:pool-unit"], 1)

    second = make_store(tmp_path / "two")
    dump = tmp_path / "local.jsonl"
    dump.write_text(_export_text(first / "AGENTS.local.db"))
    import_file(LayerSet.from_directory(second), LayerName.LOCAL, dump)
    moved = service_over(LayerSet.from_directory(second), tmp_path / "data")
    assert history(moved, "alice", b["id"]) == before
    got = moved.recall("alice", "worker pool threads")["memories"]
    assert [m["id"] for m in got] == [b["id"]]


def test_compaction_keeps_global_memories_and_their_versions(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    svc = service_over(LayerSet.from_directory(store), tmp_path / "data")
    g1 = svc.save("admin", "Every service logs in UTC", "convention", scope="global",
                  human=True, context="ops")
    g2 = svc.save("admin", "Every service logs in UTC with ISO dates", "convention",
                  scope="global", human=True)
    assert g2["status"] == "updated"
    gone = svc.save("admin", "Deploys freeze on Fridays", "instruction", scope="global",
                    human=True)
    svc.delete("admin", gone["id"], human=True)
    out = tmp_path / "new" / "AGENTS.db"
    report = compact(store / "AGENTS.db", store / "AGENTS.user.db", out)
    assert report.hidden_dropped == 0
    compacted = LayerSet({LayerName.BASE: out})
    after = service_over(compacted, tmp_path / "data")
    versions, context, _, _ = history(after, "bob", g2["id"])
    assert versions == [g2["id"], g1["id"]] and context == "ops"
    seen = after.recall("bob", "service logs in UTC")["memories"]
    assert [m["id"] for m in seen] == [g2["id"]]
    assert LayerFile.open(out).validate() == []


def test_general_search_and_chunk_reads_leave_memories_out(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    layers = LayerSet.from_directory(store)
    svc = service_over(layers, tmp_path / "data")
    mine = svc.save("alice", "Layer precedence questions go to Dana", "fact", scope="project")
    ctx = ContextService(layers, HashEmbedder())
    hits = ctx.search(SearchParams(query="layer precedence", k=50), None)["results"]
    assert hits and not any(h["kind"].startswith("memory.") for h in hits)
    with pytest.raises(ValidationError, match="private"):
        ctx.search(SearchParams(query="x", k=5, filters={"kind": ["memory.fact.alice"]}), None)
    with pytest.raises(NotFoundError, match=f"no chunk {mine['chunk_id']} in any layer"):
        ctx.read_chunk(mine["chunk_id"], None, None)  # read by its handle, as on a server


def test_an_agents_global_save_becomes_global_when_a_human_accepts_it(tmp_path: Path) -> None:
    from sediment.review.decisions import accept
    from sediment.store.events import fold_proposals

    store = make_store(tmp_path / "store")
    layers = LayerSet.from_directory(store)
    svc = service_over(layers, tmp_path / "data")
    out = svc.save("alice", "Every repository has a CODEOWNERS file", "convention",
                   scope="global")
    assert out["status"] == "proposed"
    assert svc.recall("bob", "repository CODEOWNERS file")["memories"] == []
    assert [m["pending"] for m in svc.list_memories("alice")["memories"]] == [True]
    (proposal,) = [p.id for p in fold_proposals(layers.events()).values()
                   if p.context_id == out["chunk_id"]]
    accept(layers, [proposal], "agreed")
    seen = svc.recall("bob", "repository CODEOWNERS file")["memories"]
    assert [(m["chunk_id"], m["scope"]) for m in seen] == [(out["chunk_id"], "global")]
