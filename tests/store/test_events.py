"""One module owns event kinds; temporaries of live writers are left alone."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from sediment.format import Chunk, LayerFile, encode_layer
from sediment.store.atomic import remove_stale_temporaries
from sediment.store.events import (
    DECISION,
    META_PREFIX,
    PROPOSAL,
    is_meta_kind,
    kind_mask,
)
from tests.conftest import REPO

SRC = REPO / "src" / "sediment"


def test_only_the_events_module_spells_the_meta_prefix() -> None:
    literal = re.compile(r"""["']meta\.(?!\*)""")
    offenders = []
    for path in SRC.rglob("*.py"):
        if path == SRC / "store" / "events.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if literal.search(code):
                offenders.append(f"{path.relative_to(REPO)}:{n}")
    assert offenders == []
    assert PROPOSAL.startswith(META_PREFIX) and is_meta_kind(DECISION)


def test_kind_mask_marks_the_rows_of_matching_kinds(tmp_path: Path) -> None:
    kinds = ["note", PROPOSAL, "canonical", "note", DECISION]
    chunks = [Chunk(i, k, f"c{i}", "human", 1.0, 0, ()) for i, k in enumerate(kinds, 1)]
    path = tmp_path / "x.db"
    path.write_bytes(encode_layer(chunks, np.zeros((5, 2), dtype=np.float32)))
    f = LayerFile.open(path)
    assert kind_mask(f, is_meta_kind).tolist() == [False, True, False, False, True]
    assert kind_mask(f, "note".__eq__).tolist() == [True, False, False, True, False]
    assert kind_mask(f, lambda _k: False).tolist() == [False] * 5


def test_only_temporaries_of_dead_writers_are_removed(tmp_path: Path) -> None:
    layer = tmp_path / "AGENTS.local.db"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait(timeout=30)
        names = {
            "live": f".AGENTS.local.db.{live.pid}.abcd1234.tmp",
            "dead": f".AGENTS.local.db.{dead.pid}.abcd1234.tmp",
            "old": ".AGENTS.local.db.k2j4h5g6.tmp",
            "other layer": f".AGENTS.delta.db.{dead.pid}.abcd1234.tmp",
            "not ours": "AGENTS.local.db.notes.tmp",
        }
        for name in names.values():
            (tmp_path / name).write_bytes(b"partial")
        removed = {p.name for p in remove_stale_temporaries(layer)}
        assert removed == {names["dead"], names["old"]}
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            names[k] for k in ("live", "other layer", "not ours"))
    finally:
        live.kill()
        live.wait(timeout=30)
