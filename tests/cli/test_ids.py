"""Chunk ids given on the command line go through one strict parser (sediment.format.ids).

Before it, ``--source '²'`` ended in an internal error (exit 70: ``'²'.isdigit()`` is true,
``int('²')`` raises) and click's integer type accepted ``' 1'``, ``'٣'`` and ``'1_0'``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import Runner

HUGE = "9" * 5000
WRITE = ("write", "--kind", "note", "--content", "x", "--confidence", "0.5", "--source")


@pytest.mark.parametrize("args,code", [
    ((*WRITE, "²"), 1), ((*WRITE, HUGE), 1), ((*WRITE, "0"), 1), ((*WRITE, "-1"), 1),
    ((*WRITE, " 1"), 1), ((*WRITE, "٣"), 1), ((*WRITE, "a.md:12\n"), 1),
    (("inspect", "x.db", "--id", "²"), 2), (("inspect", "x.db", "--id", HUGE), 2),
    (("inspect", "x.db", "--id", "0"), 2), (("inspect", "x.db", "--id=-1"), 2),
    (("inspect", "x.db", "--id", " 1"), 2), (("inspect", "x.db", "--id", "1_0"), 2),
    (("promote", "--ids", "1,²", "--yes"), 2), (("promote", "--ids", f"1,{HUGE}", "--yes"), 2),
    (("promote", "--ids", "0", "--yes"), 2), (("promote", "--ids", "1,\t2", "--yes"), 2),
    (("proposals", "show", "٣"), 2), (("proposals", "accept", "1", HUGE), 2),
    (("proposals", "reject", "--reason", "r", "--", "-4"), 2),
], ids=lambda v: None if isinstance(v, int) else " ".join(v)[:60])
def test_bad_chunk_ids_are_user_errors(sediment: Runner, tmp_path: Path,
                                       args: tuple[str, ...], code: int) -> None:
    r = sediment(*args)
    assert r.code == code, (r.out, r.err[-500:])
    assert "Traceback" not in r.err and "Internal error" not in r.err
    assert ("not a chunk id" in r.err or "path:line" in r.err
            or "the maximum is 4096" in r.err)
    assert len(r.err) < 1500
