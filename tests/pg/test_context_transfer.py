"""Progressive context through ``sediment push --context`` and ``sediment pull --context``:
a directory's store, filled through ``sediment context``, becomes one actor's context on the
server (new ids, every reference following them) and comes back as a directory's store that
answers the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sediment.format import LayerFile
from tests.conftest import Runner

ALICE = {"SEDIMENT_ACTOR": "alice"}


def _json(run: Any) -> Any:
    assert run.code == 0, run.err
    return json.loads(run.out)


def _fill(sediment: Runner, src: Path) -> None:
    """A store with a skill, iterations, an error marked helpful, access counts, and a
    summary of old iterations (supersessions, and the oldest archived)."""
    where = ["--dir", str(src)]
    (src / "sediment.toml").write_text("[context]\nactive_iterations = 1\n"
                                       "summarize_after_iterations = 2\n"
                                       "archive_after_iterations = 4\n")
    assert sediment("write", *where, "--kind", "note", "--confidence", "0.9", "--content",
                    "The build uses a pinned toolchain.", env=ALICE).code == 0
    _json(sediment("context", "store", "Always pin the toolchain version.", "--type",
                           "skill", "--tag", "build", "--json", *where, env=ALICE))
    for i in range(1, 7):
        sediment("context", "iteration", str(i), f"Built target {i} of the release.", *where,
                 env=ALICE)
    failed = _json(sediment("context", "iteration", "7", "Linker failed.", "--failed",
                            "--error", "undefined reference to main", "--json", *where,
                            env=ALICE))
    _json(sediment("context", "mark", failed["error_id"], "--helpful", "--reason",
                   "it named the missing symbol", "--json", *where, env=ALICE))
    _json(sediment("context", "relevant", "toolchain version", "--min-score", "0", "--json",
                   *where, env=ALICE))  # access counts: a use event
    summary = _json(sediment("context", "summarize", "--older-than", "3", "--json", *where,
                             env=ALICE, cwd=src))
    assert summary, summary
    assert list((src / ".sediment" / "context" / "archive").glob("AGENTS.archive-*.db"))


def _accesses(sediment: Runner, *where: str) -> int:
    return int(_json(sediment("context", "stats", "--json", *where, env=ALICE))["accesses"])


def _view(sediment: Runner, *where: str) -> dict[str, Any]:
    """What alice sees of her context, without ids (a push renumbers them). Its access
    count is the one before this view's own search, which records more (``accesses``)."""
    stats = _json(sediment("context", "stats", "--json", *where, env=ALICE))
    history = _json(sediment("context", "history", "--last", "10", "--json", *where,
                             env=ALICE))
    skills = _json(sediment("context", "skills", "--json", *where, env=ALICE))
    relevant = _json(sediment("context", "relevant", "linker undefined reference",
                              "--min-score", "0", "--json", *where, env=ALICE))
    refs = {f"c{h['iteration']}": h for h in history["iterations"]}
    for row in relevant["items"]:
        row.pop("id", None)
        named = row.get("metadata", {}).pop("iteration_item", None)
        if named is not None:  # an error names its iteration's item, by that item's id
            assert refs[f"c{row['iteration']}"]["id"] == f"c{named}", (row, refs)
    return {"stats": {k: v for k, v in stats.items() if k not in {"size_bytes", "store"}},
            "history": [{k: v for k, v in h.items()
                         if not k.endswith("id") and not k.startswith(("access", "last_acc"))}
                        for h in history["iterations"]],
            "skills": [s["content"] for s in skills["skills"]],
            "relevant": [(r["type"], r["content"], round(r["score"], 6),
                          r.get("usefulness")) for r in relevant["items"]]}


def _same(view: dict[str, Any], accesses: int) -> dict[str, Any]:
    """``view`` as it reads once ``accesses`` searches have been recorded."""
    return {**view, "stats": {**view["stats"], "accesses": accesses}}


def test_context_moves_to_the_server_and_back(sediment: Runner, pg_url: str,
                                              tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    _fill(sediment, src)
    before = _view(sediment, "--dir", str(src))
    assert before["stats"]["total"] > 0 and before["history"]
    assert before["stats"]["by_state"].get("archived", 0) > 0, before["stats"]
    accesses = _accesses(sediment, "--dir", str(src))
    assert accesses > before["stats"]["accesses"] > 0

    pushed = _json(sediment("push", "--store", pg_url, "--dir", str(src), "--context",
                            "--actor", "alice", "--json"))
    assert pushed["context"] > 0
    on_server = _view(sediment, "--store", pg_url)
    assert on_server["stats"]["accesses"] == accesses  # the use events came along
    assert on_server == _same(before, accesses)
    other = _json(sediment("context", "stats", "--json", "--store", pg_url,
                           env={"SEDIMENT_ACTOR": "bob"}))
    assert other["total"] == 0  # alice's context, not bob's

    again = sediment("push", "--store", pg_url, "--dir", str(src), "--context", "--actor",
                     "alice")
    assert again.code == 1 and "already has" in again.err and "context rows" in again.err

    accesses = _accesses(sediment, "--store", pg_url)
    back = tmp_path / "back"
    back.mkdir()
    pulled = _json(sediment("pull", "--store", pg_url, "--dir", str(back), "--context",
                            "--actor", "alice", "--json"))
    assert pulled["context"] == pushed["context"] + 1  # and the server view's use event
    assert _view(sediment, "--dir", str(back)) == _same(before, accesses)
    store = back / ".sediment" / "context"
    assert sorted(p.name for p in (store / "archive").glob("*.db")) == sorted(
        p.name for p in (src / ".sediment" / "context" / "archive").glob("*.db"))
    assert sediment("validate", str(store / "AGENTS.local.db")).code == 0
    for archive in (store / "archive").glob("*.db"):
        assert sediment("validate", str(archive)).code == 0
    # Later writes continue past the pulled ids.
    top = max(int(LayerFile.open(p).ids.max())
              for p in [store / "AGENTS.local.db", *(store / "archive").glob("*.db")])
    new = _json(sediment("context", "store", "A note written after the pull.", "--type",
                         "output", "--json",
                         "--dir", str(back), env=ALICE))
    assert int(str(new["id"]).lstrip("c")) > top

    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = _json(sediment("pull", "--store", pg_url, "--dir", str(empty), "--context",
                             "--actor", "bob", "--json"))
    assert nothing["context"] == 0
    assert _json(sediment("context", "stats", "--json", "--dir", str(empty),
                          env={"SEDIMENT_ACTOR": "bob"}))["total"] == 0

    kept = sediment("pull", "--store", pg_url, "--dir", str(back), "--context", "--actor",
                    "alice")
    assert kept.code == 1 and "--force" in kept.err
    accesses = _accesses(sediment, "--store", pg_url)
    forced = _json(sediment("pull", "--store", pg_url, "--dir", str(back), "--force",
                            "--context", "--actor", "alice", "--json"))
    assert forced["context"] == pulled["context"]
    assert _view(sediment, "--dir", str(back)) == _same(before, accesses)  # the note is gone


def test_a_context_store_of_another_width_is_refused(sediment: Runner, pg_url: str,
                                                     tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    assert sediment("write", "--dir", str(src), "--kind", "note", "--confidence", "0.9",
                    "--content", "Sixty-four wide.", env={"SEDIMENT_EMBED_DIM": "64"}).code == 0
    assert sediment("push", "--store", pg_url, "--dir", str(src),
                    env={"SEDIMENT_EMBED_DIM": "64"}).code == 0
    other = tmp_path / "other"
    other.mkdir()
    assert sediment("write", "--dir", str(other), "--kind", "note", "--confidence", "0.9",
                    "--content", "Default width.").code == 0
    assert sediment("context", "store", "An item.", "--type", "output", "--dir", str(other),
                    env=ALICE).code == 0
    refused = sediment("push", "--store", pg_url, "--dir", str(other), "--context",
                       "--actor", "alice")
    assert refused.code == 1 and "dim: 384 vs 64" in refused.err, refused.err
    assert "could not be searched with the server's embedder" in refused.err
    stats = _json(sediment("context", "stats", "--json", "--store", pg_url, env=ALICE))
    assert stats["total"] == 0
