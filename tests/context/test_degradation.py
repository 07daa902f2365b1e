"""Retrieval degrades step by step, each step tested by breaking the layer below it:
semantic + lexical -> lexical only -> cached results -> empty with a warning."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sediment.context import ContextLoop, ContextSettings
from sediment.embed import HashEmbedder
from sediment.errors import EmbeddingError, ValidationError
from tests.context.conftest import break_store, make_loop

pytestmark = pytest.mark.usefixtures("context_backend")


class FailingEmbedder:
    """An embedder whose model cannot load (e.g. its package is missing)."""

    profile = HashEmbedder().profile

    def embed(self, texts: Sequence[str]) -> Any:
        raise EmbeddingError("the MiniLM model is not installed")

    def metadata(self) -> dict[str, Any]:
        return {}


def _fill(loop: ContextLoop) -> None:
    loop.store_context("al", "The staging database lives on port 5433.", "task")
    loop.store_iteration_result("al", 1, "Wired the login form.", True)
    loop.store_iteration_result("al", 2, "Migrations failed.", False,
                                error="relation users does not exist")


def test_full_mode(loop: ContextLoop) -> None:
    _fill(loop)
    out = loop.get_relevant_context("al", "staging database port", min_score=0.0)
    assert out["stats"]["mode"] == "semantic+lexical" and out["warnings"] == []
    assert out["items"][0]["content"].startswith("The staging database")


def test_lexical_when_the_embedder_fails(tmp_path: Path) -> None:
    _fill(make_loop(tmp_path))
    broken = make_loop(tmp_path, embedder=FailingEmbedder())
    out = broken.get_relevant_context("al", "staging database port", min_score=0.0)
    assert out["stats"]["mode"] == "lexical"
    assert "embedder unavailable" in out["warnings"][0]
    assert out["items"][0]["content"].startswith("The staging database")
    # the calibrated lexical part alone: BM25 / (BM25 + 5), never 1.0 by normalisation
    assert 0.3 < out["items"][0]["factors"]["semantic"]["value"] < 1.0
    stored = broken.store_context("al", "Use the staging port.", "task")
    assert stored["embedded"] is False and "warning" in stored
    assert broken.health()["status"] == "degraded"


def test_cache_when_the_store_is_unreadable(tmp_path: Path) -> None:
    loop = make_loop(tmp_path)
    _fill(loop)
    first = loop.get_relevant_context("al", "staging database port", min_score=0.0)
    break_store(tmp_path)
    again = make_loop(tmp_path).get_relevant_context("al", "staging database port",
                                                     min_score=0.0)
    assert again["stats"]["mode"] == "cache"
    assert [d["id"] for d in again["items"]] == [d["id"] for d in first["items"]]
    assert any("unreadable" in w for w in again["warnings"])


def test_empty_when_there_is_no_cache_either(tmp_path: Path) -> None:
    loop = make_loop(tmp_path)
    _fill(loop)
    break_store(tmp_path)
    out = make_loop(tmp_path).get_relevant_context("al", "anything", max_tokens=100)
    assert out["stats"]["mode"] == "empty" and out["items"] == []
    assert out["block"].startswith("## Relevant Context")
    assert any("empty context" in w for w in out["warnings"])


def test_full_store_prunes_before_refusing(tmp_path: Path) -> None:
    loop = make_loop(tmp_path)
    _fill(loop)
    bad = loop.get_relevant_context("al", "login form", min_score=0.0)["items"][0]["id"]
    for _ in range(2):
        loop.mark_useful("al", bad, False)
    full = make_loop(tmp_path, ContextSettings(max_size_mb=0))
    with pytest.raises(ValidationError, match="full"):
        full.store_context("al", "one more", "task")
    assert full.stats("al")["hidden"]["forgotten"] == 1


def test_cache_files_of_different_actors_and_runs_never_collide(tmp_path: Path) -> None:
    """Issue 27: ``last-<actor>-<run>.json`` gave actor ``a-b`` run ``c`` and actor ``a``
    run ``b-c`` one file, so one actor's fallback returned the other's items."""
    loop = make_loop(tmp_path)
    loop.store_context("a-b", "The staging database lives on port 5433.", "task",
                       run_id="c")
    loop.store_context("a", "The payroll export runs at midnight.", "task", run_id="b-c")
    loop.store_context("a", "The staging deploy key sits in the vault.", "task",
                       run_id="b")
    mine = loop.get_relevant_context("a-b", "staging", min_score=0.0, run_id="c")
    theirs = loop.get_relevant_context("a", "staging", min_score=0.0, run_id="b-c")
    everything = loop.get_relevant_context("a", "staging", min_score=0.0)
    assert mine["items"] and theirs["items"]
    names = {p.name for p in (tmp_path / "context" / "cache").iterdir()}
    assert len(names) == 3
    assert all(len(n) == len("last-.json") + 64 for n in names)
    break_store(tmp_path)
    broken = make_loop(tmp_path)
    for actor, run, first in (("a-b", "c", mine), ("a", "b-c", theirs),
                              ("a", None, everything)):
        again = broken.get_relevant_context(actor, "staging", min_score=0.0, run_id=run)
        assert again["stats"]["mode"] == "cache"
        assert [d["id"] for d in again["items"]] == [d["id"] for d in first["items"]]
    assert broken.get_relevant_context("a", "staging", run_id="c")["stats"]["mode"] == "empty"
