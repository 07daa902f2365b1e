"""Search results a person can read (issue 15, items 5-7) and the layer that knows its
embedder (item 12), through the real ``sediment search``."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from sediment.cli._hits import score_digits
from sediment.store import HUMAN_WRITABLE, LayerName, LayerSet, NewChunk
from tests.cli.conftest import Runner

LONG = " ".join(["The deploy job pushes containers to the staging cluster every night."] * 8)
DOCS = {
    "docs/deploy.md": f"# Deploy\n\n{LONG}\n",
    "docs/rollback.md": "# Rollback\n\nA failed deploy is rolled back with helm rollback.\n",
    "docs/cluster.md": "# Cluster\n\nThe staging cluster has three node pools.\n",
    "knowledge.yaml": ('kcp_version: "0.1"\nproject: demo\nunits:\n'
                       '  - id: rollback\n    path: docs/rollback.md\n'
                       '    intent: "How is a deploy undone?"\n    scope: project\n'
                       '    audience: [agent]\n    triggers: [undo]\n'),
}
HEADER = re.compile(r"^ ?(\d+)  (\d\.\d{4,8})  (base|user|delta|local):(\d+)  (\S+)  (\S+)")


def project(sediment: Runner, root: Path, *extra: str) -> Path:
    for rel, text in DOCS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    r = sediment("compile", "--root", str(root), "--out", str(root / "AGENTS.db"), *extra)
    assert r.code == 0, r.err
    return root


def test_one_block_per_hit_fits_80_columns(sediment: Runner, tmp_path: Path) -> None:
    root = project(sediment, tmp_path)
    env = {"COLUMNS": "80"}
    r = sediment("search", "deploy staging cluster", "--dir", str(root), env=env)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert max(len(line) for line in lines) <= 80, r.out
    headers = [m for line in lines if (m := HEADER.match(line))]
    assert [int(m.group(1)) for m in headers] == list(range(1, len(headers) + 1))
    assert len(headers) >= 3
    assert {m.group(6) for m in headers} >= {"docs/deploy.md:1", "docs/cluster.md:1"}
    ids = {int(m.group(4)) for m in headers}
    assert all(sediment("inspect", str(root / "AGENTS.db"), "--id", str(i)).code == 0
               for i in list(ids)[:1])
    block = r.out.split("\n\n")[0].splitlines()
    assert len(block) <= 3 and block[-1].endswith("…")  # two lines of a long chunk
    full = sediment("search", "deploy staging cluster", "--dir", str(root), "--full", "-k", "1",
                    env=env)
    text = " ".join(line.strip() for line in full.out.splitlines()[1:])
    assert text.count("The deploy job pushes containers") == 8


def test_explain_shows_every_part_and_scores_tell_hits_apart(sediment: Runner,
                                                             tmp_path: Path) -> None:
    root = project(sediment, tmp_path)
    r = sediment("search", "undo deploy", "--dir", str(root), "--explain")
    assert r.code == 0, r.err
    joined = " ".join(line.strip() for line in r.out.splitlines())
    assert re.search(r"vector \d\.\d{4} \(rank \d+\), bm25 [\d.]+ \(rank \d+\), fused \d\.\d+, "
                     r"kcp\.trigger \+\d\.\d+, = \d\.\d+", joined), r.out
    j = sediment("search", "undo deploy", "--dir", str(root), "--explain", "--json").json()
    assert any("kcp.trigger" in h["explain"]["boosts"] for h in j["results"])
    scores = [m.group(2) for line in r.out.splitlines() if (m := HEADER.match(line))]
    assert len(scores) == len(set(scores)) >= 3, r.out
    assert "embedder: hash" in r.out


def test_score_digits_separate_neighbours() -> None:
    assert score_digits([0.5, 0.25]) == 4
    assert score_digits([0.12344, 0.12341, 0.1]) == 5
    assert score_digits([0.3, 0.3]) == 4


def test_the_layer_knows_its_embedder(sediment: Runner, tmp_path: Path) -> None:
    root = project(sediment, tmp_path, "--embedder", "hash")
    unset = {"SEDIMENT_EMBEDDER": ""}
    r = sediment("search", "deploy", "--dir", str(root), "-v", env=unset)
    assert r.code == 0, r.err
    assert "embedder: hash:sediment-hash-v1@1 (384d, l2) (recorded in the layers)" in r.err
    w = sediment("write", "--dir", str(root), "--kind", "note", "--content", "rollbacks use helm",
                 "--confidence", "0.5", env=unset)
    assert w.code == 0, w.err
    layers = sediment("layers", "--dir", str(root), env=unset)
    assert "searched with: hash:sediment-hash-v1@1" in layers.out
    clash = sediment("search", "deploy", "--dir", str(root), "--embedder", "minilm", env=unset)
    assert clash.code == 1 and "hash" in clash.err and "onnxruntime" in clash.err


def test_a_network_embedder_is_never_chosen_from_a_layer(sediment: Runner,
                                                         tmp_path: Path) -> None:
    profile = {"backend": "openai-compatible", "model": "text-embedding-3-small",
               "revision": None, "dim": 8, "output_norm": "l2"}
    LayerSet.from_directory(tmp_path).append(
        LayerName.USER, [NewChunk("note", "deploys run nightly", "human", 1.0)],
        np.eye(1, 8, dtype=np.float32), profile=profile, allowed=HUMAN_WRITABLE)
    env = {"SEDIMENT_EMBEDDER": "", "HTTPS_PROXY": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9"}
    r = sediment("search", "deploy", "--dir", str(tmp_path), env=env)
    assert r.code == 1, (r.out, r.err)
    assert "openai-compatible" in r.err and "Traceback" not in r.err
