"""The Python API (issue 15, item 15): the same services and the same answers as the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import sediment as sediment_pkg
from sediment.embed import HashEmbedder
from tests.cli.conftest import Runner
from tests.conftest import REPO


@pytest.fixture
def project(sediment: Runner, tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text(
        "# Demo\n\nPrecedence is local > user > delta > base.\n\n## Deploy\n\n"
        "Deploys run nightly from main.\n")
    r = sediment("compile", "--root", str(tmp_path), "--include", "*.md", "--out",
                 str(tmp_path / "AGENTS.db"))
    assert r.code == 0, r.err
    return tmp_path


def test_search_and_write_match_the_cli(sediment: Runner, project: Path) -> None:
    store = sediment_pkg.open(project)
    assert isinstance(store, sediment_pkg.Store)
    assert isinstance(store.embedder.profile, type(HashEmbedder(8).profile))
    assert store.embedder.profile.backend == "hash"  # recorded in the layer
    hits = store.search("deploys nightly", k=5)
    cli = sediment("search", "deploys nightly", "--dir", str(project), "-k", "5", "--json")
    assert [(h.id, h.layer.value, pytest.approx(h.score)) for h in hits] == \
        [(x["id"], x["layer"], x["score"]) for x in cli.json()["results"]]
    new_id = store.write("Rollbacks use helm.", kind="runbook", confidence=0.7,
                         sources=["README.md:7"])
    found = sediment("search", "helm rollbacks", "--dir", str(project), "--json").json()
    assert found["results"][0]["id"] == new_id and found["results"][0]["layer"] == "local"
    assert store.get(new_id) is not None
    proposal = store.propose(new_id)
    assert proposal.copied_to_delta
    assert store.forget(new_id, reason="wrong").layer.value == "local"
    assert new_id not in [h.id for h in store.search("helm rollbacks")]
    with pytest.raises(sediment_pkg.ValidationError, match="confidence"):
        store.write("x", kind="note", confidence=2)
    with pytest.raises(sediment_pkg.NotFoundError):
        sediment_pkg.open(project / "missing")


def test_the_documented_examples_run(project: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    text = (REPO / "docs" / "python-api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2
    monkeypatch.chdir(project)
    monkeypatch.setenv("SEDIMENT_DATA_DIR", str(project / "data"))
    (project / "build").mkdir()
    (project / "build" / "demo").symlink_to(project, target_is_directory=True)
    for code in blocks:
        exec(compile(code, "docs/python-api.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "The user prefers tabs over spaces." in printed
    assert "skill Pin psycopg2-binary" in printed


def test_memories_and_context_through_the_python_api(project: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEDIMENT_DATA_DIR", str(project / "data"))
    with sediment_pkg.open(project, actor="alice") as alice:
        saved = alice.save_memory("The user prefers tabs over spaces.", "preference")
        assert saved["id"], saved
        found = alice.recall("tabs or spaces?")
        assert [m["content"] for m in found["memories"]][:1] == \
            ["The user prefers tabs over spaces."]
        alice.store_context("Fix: pin psycopg2-binary to 2.9 for the build.", "skill")
        block = alice.relevant_context("psycopg2 build fails")
        assert "psycopg2-binary" in json.dumps(block)
        note = alice.write("Alice's own note on the deploy.", kind="note", confidence=0.5)
    with sediment_pkg.open(project, actor="bob") as bob:
        assert bob.recall("tabs or spaces?")["memories"] == []
        assert bob.get(note) is None
        assert note not in [h.id for h in bob.search("Alice's own note on the deploy")]
    owner = sediment_pkg.open(project)  # no actor: reads as the machine's owner, as the CLI
    assert owner.get(note) is not None


def test_the_environment_reaches_the_python_api(project: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``sediment.open`` is an adapter: it reads the environment once, as the CLI does,
    and hands its workspace the actor, the data directory and the dedup threshold."""
    monkeypatch.setenv("SEDIMENT_ACTOR", "ada")
    monkeypatch.setenv("SEDIMENT_DATA_DIR", str(project / "mine"))
    monkeypatch.setenv("SEDIMENT_MEMORY_DEDUP", "0.5")
    with sediment_pkg.open(project) as store:
        assert (store.actor, store.workspace.actor) == ("ada", "ada")
        assert store.workspace.memory.dedup_threshold == 0.5
        saved = store.save_memory("The user prefers tabs over spaces.", "preference",
                                  scope="user")
        assert saved["status"] == "created", saved
        assert list((project / "mine").rglob("*.db")), "the user memory is not in the data dir"
    monkeypatch.setenv("SEDIMENT_MEMORY_DEDUP", "most")
    with pytest.raises(sediment_pkg.ConfigError,
                       match="SEDIMENT_MEMORY_DEDUP='most' is not a number"):
        sediment_pkg.open(project)


@pytest.mark.parametrize(("call", "wrong"), [
    ("search-kinds", 3), ("search-kinds", "canonical"), ("search-layers", 3),
    ("write-sources", 7), ("write-sources", "README.md:7"), ("get", ["1"]), ("get", {"id": 1}),
    ("get", 0), ("save-source", ["explicit"]),
])
def test_a_wrong_type_through_the_python_api_is_a_validation_error(
        project: Path, monkeypatch: pytest.MonkeyPatch, call: str, wrong: object) -> None:
    """Not a TypeError from deep inside: the same error the MCP tools answer with."""
    monkeypatch.setenv("SEDIMENT_DATA_DIR", str(project / "data"))
    calls = {
        "search-kinds": lambda s: s.search("deploys", kinds=wrong),
        "search-layers": lambda s: s.search("deploys", layers=wrong),
        "write-sources": lambda s: s.write("x", kind="note", confidence=0.5, sources=wrong),
        "get": lambda s: s.get(wrong),
        "save-source": lambda s: s.save_memory("Deploys are nightly", "fact", source=wrong),
    }
    with sediment_pkg.open(project, embedder="hash") as store:
        with pytest.raises(sediment_pkg.ValidationError):
            calls[call](store)
        assert [h.id for h in store.search("deploys", k=3)]
