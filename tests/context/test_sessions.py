"""``persistence = "session"`` (docs/architecture.md, "Ids"): each session's context store
numbers its ids from the start of the context range, like the project's persistent store,
so two of them hold the same ids. That is safe only because a process reads one context
store, never two: a workspace (what the CLI, ``sediment serve``, the web page and the Python
API build) opens its session's store alone, not the other sessions' or the persistent one
beside them. This pins that assumption: a path that read two stores at once would have to
renumber, and fails here first."""

from __future__ import annotations

from pathlib import Path

from sediment.context import ContextSettings
from sediment.embed import HashEmbedder
from sediment.store import LayerSet
from sediment.store.ids import CONTEXT_IDS
from sediment.workspace import Places, Workspace


def _workspace(root: Path, persistence: str, session: str) -> Workspace:
    places = Places(root / "data", context=ContextSettings(persistence=persistence),
                    session=session, actor="ann", tokens_file=root / "tokens.json")
    return Workspace.over_files(LayerSet.from_directory(root), HashEmbedder(), places)


def test_each_workspace_reads_its_one_context_store(tmp_path: Path) -> None:
    where = {"s1": ("session", "s1"), "s2": ("session", "s2"), "project": ("project", "")}
    ids: dict[str, str] = {}
    for name, (persistence, session) in where.items():
        ws = _workspace(tmp_path, persistence, session)
        try:
            ids[name] = ws.context.store_context("ann", f"The {name} skill: use tabs.",
                                                 "skill")["id"]
        finally:
            ws.close()
    # the same first id in each store: they must never be read together
    assert set(ids.values()) == {f"c{CONTEXT_IDS.first}"}, ids
    assert (tmp_path / ".sediment" / "context" / "sessions" / "s1").is_dir()
    for name, (persistence, session) in where.items():
        ws = _workspace(tmp_path, persistence, session)
        try:
            got = ws.context.get_relevant_context("ann", "skill use tabs", max_items=10,
                                                  min_score=0.0)["items"]
            stats = ws.context.stats("ann")
        finally:
            ws.close()
        assert [i["content"] for i in got] == [f"The {name} skill: use tabs."], (name, got)
        assert stats["total"] == 1, (name, stats)
