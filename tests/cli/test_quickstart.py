"""The README's main job, with the real default embedder: compile this repository, search it.

The whole repository's Markdown (834 chunks and growing) is compiled with the hash embedder:
every page compiles, nothing is skipped. The real model embeds the pages that explain layers
(README.md, docs/search.md, docs/architecture.md: about 60 chunks), which is what the search
needs, and compiles them twice (the same bytes, nothing embedded again). Embedding every page
with the real model took most of this test's two minutes and proved nothing more about it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sediment.format import LayerFile
from tests.cli.conftest import Runner
from tests.conftest import REPO

PAGES = ("README.md", "docs/search.md", "docs/architecture.md")


def test_this_repository_compiles_whole(sediment: Runner, tmp_path: Path) -> None:
    r = sediment("compile", "--root", str(REPO), "--include", "**/*.md", "--exclude",
                 "build/**", "--out", str(tmp_path / "AGENTS.db"), "--json", timeout=600)
    assert r.code == 0, r.err
    report = r.json()
    assert report["chunks"] >= 300 and report["skipped"] == [], report


@pytest.mark.slow
def test_compile_this_repository_and_search_it(sediment: Runner, tmp_path: Path) -> None:
    env = {"SEDIMENT_EMBEDDER": "minilm"}
    pages = [arg for page in PAGES for arg in ("--include", page)]
    out = tmp_path / "AGENTS.db"
    r = sediment("compile", "--root", str(REPO), *pages, "--out", str(out), "--json",
                 env=env, timeout=600)
    assert r.code == 0, r.err
    report = r.json()
    assert report["files"] == len(PAGES)
    assert report["chunks"] >= 10 and report["skipped"] == []
    f = LayerFile.open(out)
    assert f.embedding_profile is not None
    assert f.embedding_profile["backend"] == "onnxruntime"
    assert f.embedding_profile["output_norm"] == "l2"
    # -k 10: these pages also speak of "two layers" and "the same" text.
    r = sediment("search", "which layer wins when two layers hold the same chunk",
                 "--dir", str(tmp_path), "-k", "10", "--json", env=env, timeout=300)
    assert r.code == 0, r.err
    hits = r.json()["results"]
    assert any("precedence" in h["content"].lower() for h in hits), hits
    again = sediment("compile", "--root", str(REPO), *pages, "--out",
                     str(tmp_path / "again.db"), "--json", env=env, timeout=600)
    assert again.json()["sha256"] == report["sha256"]
    assert again.json()["embedded"] == 0
