"""No command writes the base file through another role (issue 13, item 2).

Each path runs the real ``sediment`` command against a compiled base, then checks the base's
bytes are unchanged and the error is one line.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from sediment.errors import PermissionDeniedError
from sediment.ops.propose import propose
from sediment.store import HUMAN_WRITABLE, LayerName, LayerSet, NewChunk
from tests import zygote
from tests.conftest import SEDIMENT, Runner

NOTE = ("--kind", "note", "--content", "A note about deploys.", "--confidence", "0.5")


@pytest.fixture
def repo(sediment: Runner, tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "guide.md").write_text("# Guide\n\nDeploys run nightly.\n")
    r = sediment("compile", "--root", str(root), "--include", "**/*.md", "--no-kcp",
                 "--out", str(root / "AGENTS.db"))
    assert r.code == 0, r.err
    return root


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refused(sediment: Runner, root: Path, *args: str) -> None:
    before = digest(root / "AGENTS.db")
    r = sediment(*args, cwd=root)
    assert r.code == 1, (r.out, r.err)
    assert r.err.startswith("Error: ") and r.err.count("\n") == 1, r.err
    assert "immutable" in r.err, r.err
    assert digest(root / "AGENTS.db") == before


def delta_chunk(sediment: Runner, root: Path) -> int:
    r = sediment("write", "--dir", str(root), "--scope", "delta", *NOTE, "--json")
    assert r.code == 0, r.err
    return int(r.json()["id"])


def test_write_local_and_delta(sediment: Runner, repo: Path) -> None:
    refused(sediment, repo, "write", "--local", "AGENTS.db", *NOTE)
    refused(sediment, repo, "write", "--scope", "delta", "--delta", "AGENTS.db", *NOTE)
    (repo / "sub").mkdir()
    refused(sediment, repo, "write", "--local", str(repo / "sub" / ".." / "AGENTS.db"), *NOTE)


def test_another_name_for_the_same_file(sediment: Runner, repo: Path) -> None:
    os.link(repo / "AGENTS.db", repo / "hard.db")
    (repo / "soft.db").symlink_to(repo / "AGENTS.db")
    refused(sediment, repo, "write", "--local", "hard.db", *NOTE)
    refused(sediment, repo, "write", "--local", "soft.db", *NOTE)
    custom = repo / "custom.db"
    custom.write_bytes((repo / "AGENTS.db").read_bytes())
    before = digest(custom)
    r = sediment("write", "--base", "custom.db", "--local", "custom.db", *NOTE, cwd=repo)
    assert r.code == 1 and "immutable" in r.err and digest(custom) == before


def test_import_into_the_base(sediment: Runner, repo: Path) -> None:
    delta_chunk(sediment, repo)
    assert sediment("export", "AGENTS.delta.db", "--out", "d.jsonl", cwd=repo).code == 0
    refused(sediment, repo, "import", "d.jsonl", "--into", "AGENTS.db")
    refused(sediment, repo, "import", "d.jsonl", "--into", "AGENTS.db", "--scope", "user")


def test_promote_to_the_base(sediment: Runner, repo: Path) -> None:
    cid = delta_chunk(sediment, repo)
    refused(sediment, repo, "promote", "--to", "AGENTS.db", "--ids", str(cid), "--yes")


def test_accept_into_the_base(sediment: Runner, repo: Path) -> None:
    cid = delta_chunk(sediment, repo)
    pid = propose(LayerSet.from_directory(repo), cid, actor="tester").proposal_id
    refused(sediment, repo, "proposals", "accept", str(pid), "--user", "AGENTS.db")
    r = sediment("proposals", "list", "--json", cwd=repo)
    assert [p["status"] for p in r.json()] == ["pending"]


def test_serve_with_the_base_as_local(repo: Path) -> None:
    before = digest(repo / "AGENTS.db")
    params = StdioServerParameters(
        command=zygote.script(str(SEDIMENT)),
        args=["serve", "--dir", str(repo), "--local", "AGENTS.db",
                                     "--embedder", "hash", "--no-warm-up"],
        env=dict(os.environ), cwd=str(repo))

    async def main() -> tuple[bool, str]:
        with anyio.fail_after(60):
            async with Client(params) as client:
                r = await client.call_tool("agents_context_write", {
                    "content": "A note.", "kind": "note", "confidence": 0.5, "scope": "local"})
                text = " ".join(getattr(c, "text", "") for c in r.content)
                return r.is_error, text

    is_error, text = anyio.run(main)
    assert is_error and "immutable" in text and "\n" not in text.strip()
    assert digest(repo / "AGENTS.db") == before


def test_the_store_refuses_whatever_role_names_it(repo: Path) -> None:
    for name in HUMAN_WRITABLE:
        ls = LayerSet({LayerName.BASE: repo / "AGENTS.db", name: repo / "AGENTS.db"})
        with pytest.raises(PermissionDeniedError, match="immutable"):
            ls.append(name, [NewChunk("note", "x", "mcp", 0.5)], [[0.0]],  # type: ignore[arg-type]
                      profile=None, allowed=HUMAN_WRITABLE)
    elsewhere = repo / "elsewhere"
    elsewhere.mkdir()
    ls = LayerSet({LayerName.LOCAL: elsewhere / "AGENTS.db"})
    with pytest.raises(PermissionDeniedError, match="immutable"):
        ls.append(LayerName.LOCAL, [NewChunk("note", "x", "mcp", 0.5)], [[0.0]],  # type: ignore[arg-type]
                  profile=None)
    assert not (elsewhere / "AGENTS.db").exists()
