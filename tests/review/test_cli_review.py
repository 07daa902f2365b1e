"""End-to-end: the real ``sediment`` review commands on real files, as a reviewer runs them."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from sediment.cli._chunk import show_chunk
from sediment.format import LayerFile
from sediment.ops.propose import propose
from sediment.review import SourceLines
from sediment.store import LayerSet
from tests.cli.conftest import Runner

GUIDE = """# Guide

Requests to /billing MUST include the X-Account header.

## Deploy

The deploy job pushes containers to the staging cluster every night.
"""


def make_repo(sediment: Runner, root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "guide.md").write_text(GUIDE)
    r = sediment("compile", "--root", str(root), "--include", "**/*.md",
                 "--out", str(root / "AGENTS.db"))
    assert r.code == 0, r.err
    return root


def agent_writes(sediment: Runner, root: Path, content: str, source: str = "docs/guide.md:3",
                 kind: str = "invariant") -> int:
    r = sediment("write", "--dir", str(root), "--scope", "delta", "--author", "mcp",
                 "--kind", kind, "--content", content, "--confidence", "0.8",
                 "--source", source, "--json")
    assert r.code == 0, r.err
    return int(r.json()["id"])


def agent_proposes(root: Path, chunk_id: int) -> int:
    return propose(LayerSet.from_directory(root), chunk_id, actor="tester").proposal_id


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_rfc15_flow(sediment: Runner, tmp_path: Path) -> None:
    """compile -> agent writes to delta -> propose -> diff -> accept -> compact -> sign ->
    verify, then rotation and a fresh id."""
    root = make_repo(sediment, tmp_path / "repo")
    good = agent_writes(sediment, root,
                        "Requests to /billing MUST include the X-Account header and a token.")
    vague = agent_writes(sediment, root, "Deploys are sometimes slow.", "docs/guide.md:7", "note")
    p_good, p_vague = agent_proposes(root, good), agent_proposes(root, vague)

    d = sediment("diff", "--base", str(root / "AGENTS.db"), "--delta",
                 str(root / "AGENTS.delta.db"), "--json")
    assert d.code == 0, d.err
    report = d.json()
    assert {c["id"] for c in report["added"]} == {good, vague}
    assert {p["proposal_id"] for p in report["pending_proposals"]} == {p_good, p_vague}
    text = sediment("diff", "--dir", str(root), "--threshold", "0.6")
    assert text.code == 0 and "Pending proposals (2)" in text.out and "near-duplicate" in text.out

    listed = sediment("proposals", "list", "--dir", str(root), "--json").json()
    assert [(p["proposal_id"], p["status"]) for p in listed] == [(p_good, "pending"),
                                                                 (p_vague, "pending")]
    shown = sediment("proposals", "show", str(p_good), "--dir", str(root), "--root", str(root))
    assert shown.code == 0 and "header and a token" in shown.out
    assert "docs/guide.md:3: Requests to /billing MUST include the X-Account header." in shown.out

    ok = sediment("proposals", "accept", str(p_good), "--dir", str(root), "--reason", "checked")
    assert ok.code == 0 and f"accepted proposal {p_good}" in ok.out
    twice = sediment("proposals", "accept", str(p_good), "--dir", str(root))
    assert twice.code == 0 and "already accepted" in twice.out
    no = sediment("proposals", "reject", str(p_vague), "--dir", str(root), "--reason", "vague")
    assert no.code == 0 and "rejected" in no.out
    late = sediment("proposals", "accept", str(p_vague), "--dir", str(root))
    assert late.code == 1 and late.err.startswith("Error: ") and "already rejected" in late.err

    user = LayerFile.open(root / "AGENTS.user.db")
    copy = user.get(good)
    assert copy is not None and copy.author == "human" and copy.sources[0] == good
    found = sediment("search", "X-Account header and a token", "--dir", str(root),
                     "--json").json()
    assert (found["results"][0]["layer"], found["results"][0]["id"]) == ("user", good)

    out = root / "AGENTS.db.new"
    c = sediment("compact", "--base", str(root / "AGENTS.db"), "--user",
                 str(root / "AGENTS.user.db"), "--out", str(out), "--json")
    assert c.code == 0, c.err
    assert c.json()["sha256"] == sha(out) and c.json()["from_user"] == 1

    keys = tmp_path / "keys"
    assert sediment("keygen", "--out", str(keys / "ci.key")).code == 0
    assert sediment("sign", str(out), "--key", str(keys / "ci.key")).code == 0
    v = sediment("verify", str(out), "--pubkey", str(keys / "ci.key.pub"), "--json")
    assert v.code == 0 and v.json()["verified"] is True

    out.replace(root / "AGENTS.db")
    (root / "AGENTS.db.new.sig").replace(root / "AGENTS.db.sig")
    assert sediment("verify", str(root / "AGENTS.db"), "--pubkey",
                    str(keys / "ci.key.pub")).code == 0
    top = LayerSet.from_directory(root).high_water()
    r = sediment("compact", "--dir", str(root), "--out", str(root / "next.db"), "--rotate")
    assert r.code == 0 and "archived" in r.out
    assert LayerFile.open(root / "AGENTS.user.db").chunk_count == 0
    assert len(list(root.glob("AGENTS.delta.*T*.db"))) == 1
    assert agent_writes(sediment, root, "Written after the rotation.") == top + 1


def test_tampering_wrong_key_and_missing_signature(sediment: Runner, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEDIMENT_SIGNING_KEY", raising=False)
    root = make_repo(sediment, tmp_path)
    db, key = root / "AGENTS.db", root / "ci.key"
    assert sediment("keygen", "--out", str(key)).code == 0
    assert sediment("keygen", "--out", str(key)).code == 1  # never overwritten silently
    assert sediment("keygen", "--out", str(root / "other.key")).code == 0
    env = sediment("sign", str(db), env={"SEDIMENT_SIGNING_KEY": str(key)})  # key from env
    assert env.code == 0 and "AGENTS.db.sig" in env.out
    wrong = sediment("verify", str(db), "--pubkey", str(root / "other.key.pub"))
    assert wrong.code == 1 and "does not verify" in wrong.err
    data = bytearray(db.read_bytes())
    data[100] ^= 0xFF
    db.write_bytes(bytes(data))
    bad = sediment("verify", str(db), "--pubkey", str(key) + ".pub")
    assert bad.code == 1 and "modified after signing" in bad.err
    (root / "AGENTS.db.sig").unlink()
    gone = sediment("verify", str(db), "--pubkey", str(key) + ".pub")
    assert gone.code == 1 and "no signature" in gone.err
    nokey = sediment("sign", str(db))
    assert nokey.code == 2 and "--key" in nokey.err


def test_accept_twice_and_promote_rules(sediment: Runner, tmp_path: Path) -> None:
    root = make_repo(sediment, tmp_path)
    a = agent_writes(sediment, root, "First agent fact.")
    b = agent_writes(sediment, root, "Second agent fact.")
    unknown = sediment("promote", "--from", str(root / "AGENTS.delta.db"), "--to",
                       str(root / "AGENTS.user.db"), "--ids", f"{a},404,405", "--yes")
    assert unknown.code == 1 and "404, 405" in unknown.err
    assert not (root / "AGENTS.user.db").exists()
    no_tty = sediment("promote", "--dir", str(root), "--ids", str(a))
    assert no_tty.code == 2 and "--yes" in no_tty.err
    assert not (root / "AGENTS.user.db").exists()
    bad_ids = sediment("promote", "--dir", str(root), "--ids", "one,two", "--yes")
    assert bad_ids.code == 2
    done = sediment("promote", "--from", str(root / "AGENTS.delta.db"), "--to",
                    str(root / "AGENTS.user.db"), "--ids", f"{a},{b}", "--yes", "--json")
    assert done.code == 0, done.err
    assert [o["changed"] for o in done.json()] == [True, True]
    again = sediment("promote", "--dir", str(root), "--ids", str(a), "--yes")
    assert again.code == 0 and "already promoted" in again.out
    user = LayerFile.open(root / "AGENTS.user.db")
    assert {int(i) for i in user.ids} == {a, b}
    missing = sediment("proposals", "accept", "99999", "--dir", str(root))
    assert missing.code == 1 and "no proposal with id 99999" in missing.err
    assert sediment("proposals", "reject", "1", "--dir", str(root)).code == 2  # --reason


def test_compact_is_deterministic_and_never_overwrites(sediment: Runner, tmp_path: Path) -> None:
    root = make_repo(sediment, tmp_path)
    a = agent_writes(sediment, root, "Kept in the next base.")
    assert sediment("promote", "--dir", str(root), "--ids", str(a), "--yes").code == 0
    args = ("compact", "--dir", str(root), "--out")
    assert sediment(*args, str(root / "one.db")).code == 0
    assert sediment(*args, str(root / "two.db")).code == 0
    assert sha(root / "one.db") == sha(root / "two.db")
    before = sha(root / "one.db")
    again = sediment(*args, str(root / "one.db"))
    assert again.code == 1 and "--force" in again.err and sha(root / "one.db") == before
    same = sediment(*args, str(root / "AGENTS.user.db"))
    assert same.code == 1 and "one of the inputs" in same.err
    assert sediment("validate", str(root / "one.db")).code == 0


def test_export_import_round_trip_and_line_numbers(sediment: Runner, tmp_path: Path) -> None:
    root = make_repo(sediment, tmp_path)
    cid = agent_writes(sediment, root, "Exported and back.")
    agent_proposes(root, cid)
    first = root / "delta.jsonl"
    assert sediment("export", str(root / "AGENTS.delta.db"), "--out", str(first)).code == 0
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    imp = sediment("import", str(first), "--into", str(fresh / "AGENTS.delta.db"), "--json")
    assert imp.code == 0, imp.err
    assert imp.json()["chunks"] == 3
    second = root / "again.jsonl"
    assert sediment("export", str(fresh / "AGENTS.delta.db"), "--out", str(second)).code == 0
    assert first.read_text() == second.read_text()
    stdout = sediment("export", str(root / "AGENTS.delta.db"), "--out", "-")
    assert stdout.code == 0 and stdout.out == first.read_text()

    lines = first.read_text().split("\n")
    broken = json.loads(lines[2])
    broken["confidence"] = 7
    lines[2] = json.dumps(broken)
    bad = root / "bad.jsonl"
    bad.write_text("\n".join(lines))
    target = tmp_path / "empty"
    target.mkdir()
    r = sediment("import", str(bad), "--into", "user", "--dir", str(target))
    assert r.code == 1 and "bad.jsonl:3: confidence 7" in r.err
    assert list(target.iterdir()) == []
    base = sediment("import", str(first), "--into", "base", "--dir", str(target))
    assert base.code == 1 and "immutable" in base.err
    odd = sediment("import", str(first), "--into", str(target / "mine.db"))
    assert odd.code == 2 and "--scope" in odd.err
    scoped = sediment("import", str(first), "--into", str(target / "mine.db"), "--scope",
                      "user")
    # the chunk, the event recording who wrote it, the proposal
    assert scoped.code == 0 and LayerFile.open(target / "mine.db").chunk_count == 3


def test_inspect_view_resolves_provenance(sediment: Runner, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = make_repo(sediment, tmp_path)
    cid = agent_writes(sediment, root, "Billing needs a token.")
    pid = agent_proposes(root, cid)
    assert sediment("proposals", "accept", str(pid), "--dir", str(root)).code == 0
    show_chunk(root / "AGENTS.user.db", cid, lines=SourceLines(root))
    out = capsys.readouterr().out
    assert f"chunk {cid} (delta, invariant, mcp)" in out
    assert "docs/guide.md:3: Requests to /billing MUST include the X-Account header." in out
    assert "meta.proposal_event propose by tester" in out
    assert re.search(r"meta\.proposal_decision accept by \S+\n", out), out  # the reviewer
    show_chunk(root / "AGENTS.user.db", cid, lines=SourceLines(root), as_json=True)
    data = json.loads(capsys.readouterr().out)
    assert data["id"] == cid and [e["kind"] for e in data["events"]] == [
        "meta.write", "meta.proposal_event", "meta.proposal_decision"]


@pytest.mark.parametrize("command", [("diff",), ("proposals", "list"), ("proposals", "show"),
                                     ("proposals", "accept"), ("proposals", "reject"),
                                     ("promote",), ("compact",), ("keygen",), ("sign",),
                                     ("verify",), ("export",), ("import",)])
def test_every_review_command_has_help_and_json(sediment: Runner,
                                                command: tuple[str, ...]) -> None:
    r = sediment(*command, "--help")
    assert r.code == 0 and "--json" in r.out
