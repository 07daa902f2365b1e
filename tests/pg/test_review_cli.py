"""``sediment diff`` and ``sediment proposals show`` read the team server as they read the
layer files: the same report from a directory and from the project it was pushed to (the
web page's queue and diff are these same functions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sediment.store.ids import WRITTEN_START
from tests.conftest import Runner
from tests.pg.layers import BASE_TEXTS, build_layers
from tests.pg.test_transfer import HASH64


def _without_paths(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k != "layers"}


def test_diff_and_proposals_show_agree_across_backends(sediment: Runner, pg_url: str,
                                                       tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    src = build_layers(tmp_path / "src")
    (src / "docs").mkdir()
    (src / "docs" / "a.md").write_text("Layers override each other.\n")
    near = sediment("write", "--dir", str(src), "--scope", "delta", "--kind", "note",
                    "--content", BASE_TEXTS[4] + " Always.", "--confidence", "0.7",
                    "--source", "docs/a.md:1", "--source", "1", "--json", env=HASH64)
    assert near.code == 0, near.err
    new_id = near.json()["id"]
    for cid in (3, new_id):
        assert sediment("propose", "--dir", str(src), str(cid), env=HASH64).code == 0
    pushed = sediment("push", "--store", pg_url, "--dir", str(src), env=HASH64)
    assert pushed.code == 0, pushed.err

    files = sediment("diff", "--dir", str(src), "--threshold", "0.5", "--json", env=HASH64)
    store = sediment("diff", "--store", pg_url, "--threshold", "0.5", "--json", env=HASH64)
    assert files.code == 0 and store.code == 0, files.err + store.err
    a, b = files.json(), store.json()
    assert a["summary"]["conflicts"] >= 2 and a["summary"]["pending_proposals"] == 2
    assert _without_paths(a) == _without_paths(b)
    assert set(b["layers"]) == {"base", "user", "delta"}
    assert "project default" in b["layers"]["delta"]
    text = sediment("diff", "--store", pg_url, env=HASH64)
    assert text.code == 0 and "conflicts" in text.out

    for pid in (p["proposal_id"] for p in a["pending_proposals"]):
        shown = [sediment("proposals", "show", str(pid), *where, "--root", str(src), "--json",
                          env=HASH64).json() for where in (("--dir", str(src)),
                                                           ("--store", pg_url))]
        f, s = (dict(x, inspection=dict(x["inspection"], path=None)) for x in shown)
        assert f == s
    shown = sediment("proposals", "show", str(a["pending_proposals"][1]["proposal_id"]),
                     "--store", pg_url, "--root", str(src), env=HASH64)
    assert shown.code == 0 and "Layers override each other." in shown.out


def test_promote_over_the_store_does_what_it_does_over_files(sediment: Runner, pg_url: str,
                                                             tmp_path: Path) -> None:
    """The same promotion, of delta chunk 3 (which has a pending proposal) and a local
    note, over a directory and over the project it was pushed to: the same outcomes, the
    same user layer, the proposal closed on both."""
    (tmp_path / "src").mkdir()
    src = build_layers(tmp_path / "src")
    assert sediment("propose", "--dir", str(src), "3", env=HASH64).code == 0
    pushed = sediment("push", "--store", pg_url, "--dir", str(src), env=HASH64)
    assert pushed.code == 0, pushed.err
    local = [WRITTEN_START + 7]  # build_layers' local note

    def promote(*where: str) -> list[dict[str, Any]]:
        got = []
        for ids, source in (("3", ()), (str(local[0]), ("--source", "local")
                                        if "--store" in where else
                                        ("--from", str(src / "AGENTS.local.db")))):
            r = sediment("promote", *where, *source, "--ids", ids, "--reason", "good", "--yes",
                         "--json", env=HASH64)
            assert r.code == 0, r.err
            got.append(r.json())
        return got

    assert promote("--dir", str(src)) == promote("--store", pg_url)
    for where in (("--dir", str(src)), ("--store", pg_url)):
        pending = sediment("proposals", "list", *where, "--status", "pending", "--json",
                           env=HASH64)
        assert pending.code == 0 and pending.json() == [], pending.out
        closed = sediment("proposals", "list", *where, "--status", "accepted", "--json",
                          env=HASH64).json()
        assert [(p["context_id"], p["decisions"][0]["reason"]) for p in closed] == [(3, "good")]
    user = [sediment("search", *where, "--mode", "lexical", "--layers", "user", "BM25 tuning",
                     "--json", env=HASH64).json()["results"]
            for where in (("--dir", str(src)), ("--store", pg_url))]
    assert [h["id"] for h in user[0]] == [h["id"] for h in user[1]] == local

    both = sediment("promote", "--store", pg_url, "--from", str(src / "AGENTS.local.db"),
                    "--ids", "3", "--yes", env=HASH64)
    assert both.code == 2 and "two stores" in both.err
    wrong = sediment("promote", "--dir", str(src), "--source", "local", "--ids", "3", "--yes",
                     env=HASH64)
    assert wrong.code == 2 and "--source is for --store" in wrong.err
