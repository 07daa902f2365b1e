"""Memories in push and pull: files -> server -> files keeps every actor's memories, their
versions (supersession chains), contexts, relationships and use counts, as the real
``sediment memory`` command shows them on each backend; an actor's own memories move only
with ``--user-memories``, and only that actor's."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sediment.format import LayerFile
from tests.conftest import Runner

KEYS = ("content", "category", "scope", "actor", "source", "confidence", "author",
        "created_at_ms", "use_count", "last_used_ms", "context", "related_to", "forgotten")


def _mem(sediment: Runner, where: list[str], actor: str, *args: str,
         data: Path | None = None) -> Any:
    env = {"SEDIMENT_ACTOR": actor, **({"SEDIMENT_DATA_DIR": str(data)} if data else {})}
    r = sediment("memory", *args, *where, "--json", env=env)
    assert r.code == 0, (args, r.out, r.err)
    return json.loads(r.out)


def _view(sediment: Runner, where: list[str], actor: str, data: Path | None = None
          ) -> dict[str, Any]:
    """What ``actor`` sees, with the ``u`` ids (which a server renumbers) left out."""
    listed = _mem(sediment, where, actor, "list", "--limit", "1000", data=data)
    out: dict[str, Any] = {"contexts": listed["contexts"], "memories": []}
    for m in sorted(listed["memories"], key=lambda m: (m["scope"], m["content"])):
        shown = _mem(sediment, where, actor, "show", m["id"], data=data)
        out["memories"].append({
            **{k: m[k] for k in KEYS},
            "id": m["id"] if m["id"].startswith("p") else "u",
            "versions": [(v["content"], v["superseded_by"] is not None) for v in
                         shown["versions"]],
            "because": [(v.get("superseded_because") or {}).get("reason")
                        for v in shown["versions"]],
            "uses": [h["count"] for h in shown["use_history"]],
            "context": shown["context"]})
    return out


def _fill(sediment: Runner, src: list[str]) -> None:
    for actor, scope, text, extra in (
            ("alice", "user", "Alice reviews code in the morning", ["--context", "habits"]),
            ("alice", "project", "The queue worker restarts hourly",
             ["--related", "docs/q.md:4", "--context", "ops"]),
            ("alice", "project", "Deploys go out on Tuesdays", []),
            ("bob", "user", "Bob wants terse answers", []),
            ("bob", "project", "Bob's cron job runs at midnight", []),
            ("admin", "global", "All timestamps are UTC", [])):
        cat = "convention" if scope == "global" else "fact"
        _mem(sediment, src, actor, "save", text, "--category", cat, "--scope", scope, *extra)
    queue = _mem(sediment, src, "alice", "recall", "queue worker restarts")["memories"][0]
    _mem(sediment, src, "alice", "update", queue["id"], "--content",
         "The queue worker restarts every 2 hours")
    _mem(sediment, src, "alice", "save", "Deploys go out on Thursdays", "--category",
         "correction", "--source", "corrected", "--scope", "project")
    _mem(sediment, src, "alice", "contexts", "ops", "--scope", "project", "--description",
         "operations", "--priority", "0.9")
    gone = _mem(sediment, src, "bob", "save", "Bob's laptop is a ThinkPad", "--category",
                "fact", "--scope", "project")["id"]
    _mem(sediment, src, "bob", "forget", gone)
    for actor, query in (("alice", "queue worker"), ("alice", "code review morning"),
                         ("bob", "timestamps UTC"), ("alice", "timestamps UTC"),
                         ("bob", "cron midnight")):
        _mem(sediment, src, actor, "recall", query)


def test_round_trip_keeps_memories_versions_contexts_and_uses(
        sediment: Runner, pg_url: str, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    src = ["--dir", str(tmp_path / "src")]
    server = ["--store", pg_url]
    _fill(sediment, src)
    before = {a: _view(sediment, src, a) for a in ("alice", "bob")}
    glob = [m for m in before["bob"]["memories"] if m["scope"] == "global"]
    assert [m["content"] for m in glob] == ["All timestamps are UTC"]
    assert glob[0]["use_count"] >= 2  # recalled by alice and by bob: the uses are shared
    assert len(before["alice"]["memories"]) == 4 and len(before["bob"]["memories"]) == 3
    assert [m["versions"] for m in before["alice"]["memories"]
            if "queue" in m["content"]] == [[("The queue worker restarts every 2 hours", False),
                                             ("The queue worker restarts hourly", True)]]
    r = sediment("push", *server, *src, "--user-memories", "--actor", "alice", "--json")
    assert r.code == 0, r.err
    pushed = r.json()
    assert pushed["memories"]["user"] > 0 and pushed["memories"]["project"] > 0
    # nothing but memories here: the global one (with its events) stays in the user layer
    assert pushed["layers"]["user"] > 0
    assert all(n == 0 for name, n in pushed["layers"].items() if name != "user")
    on_server = {a: _view(sediment, server, a) for a in ("alice", "bob")}
    assert on_server["alice"] == before["alice"]
    bob_shared = {**before["bob"], "memories": [m for m in before["bob"]["memories"]
                                                 if m["scope"] != "user"]}
    assert on_server["bob"] == bob_shared  # bob's own memories stayed on his machine

    back, data = tmp_path / "back", tmp_path / "data2"
    back.mkdir()
    r = sediment("pull", *server, "--dir", str(back), "--user-memories", "--actor", "alice",
                 "--json", env={"SEDIMENT_DATA_DIR": str(data)})
    assert r.code == 0, r.err
    for path in [*back.glob("AGENTS*.db"), *(data / "actors" / "alice").glob("*.db")]:
        assert LayerFile.open(path).validate() == [], path
    again = ["--dir", str(back)]
    assert _view(sediment, again, "alice", data) == before["alice"]
    assert _view(sediment, again, "bob", data) == bob_shared


def test_user_memories_move_only_when_asked_and_only_once(
        sediment: Runner, pg_url: str, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    src = ["--dir", str(tmp_path / "src")]
    _mem(sediment, src, "alice", "save", "Alice likes short commits", "--category",
         "preference")
    _mem(sediment, src, "alice", "save", "The build takes 4 minutes", "--category", "fact",
         "--scope", "project")
    r = sediment("push", "--store", pg_url, *src, "--json")
    assert r.code == 0, r.err
    assert r.json()["memories"] == {"project": 2}  # the memory and its save event (handle)
    server = ["--store", pg_url]
    assert [m["scope"] for m in _mem(sediment, server, "alice", "list")["memories"]] == [
        "project"]
    r = sediment("push", "--store", pg_url, *src, "--user-memories", "--json",
                 env={"SEDIMENT_ACTOR": "alice"})
    assert r.code == 0, r.err  # the project's rows are there already: skipped
    assert {m["scope"] for m in _mem(sediment, server, "alice", "list")["memories"]} == {
        "project", "user"}
    assert _mem(sediment, server, "mallory", "list")["total"] == 0
    r = sediment("push", "--store", pg_url, *src, "--user-memories",
                 env={"SEDIMENT_ACTOR": "alice"})
    assert r.code == 1 and "already has" in r.err and "own memory rows" in r.err, r.err
    assert os.environ["SEDIMENT_DATA_DIR"]


def test_a_push_never_replaces_another_projects_memory_under_its_id(
        sediment: Runner, pg_url: str, tmp_path: Path) -> None:
    for name, text in (("a", "The build takes 4 minutes"), ("b", "Lunch is at noon")):
        (tmp_path / name).mkdir()
        _mem(sediment, ["--dir", str(tmp_path / name)], "alice", "save", text, "--category",
             "fact", "--scope", "project")
    assert sediment("push", "--store", pg_url, "--dir", str(tmp_path / "a")).code == 0
    r = sediment("push", "--store", pg_url, "--dir", str(tmp_path / "b"))
    assert r.code == 1 and "already holds other chunks under the memory ids" in r.err, r.err
    listed = _mem(sediment, ["--store", pg_url], "alice", "list")["memories"]
    assert [m["content"] for m in listed] == ["The build takes 4 minutes"]
