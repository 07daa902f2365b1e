"""Every adapter shows the same message for the same bad field: the CLI as `Error: ...`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Runner
from tests.mcp.conftest import make_store


@pytest.mark.parametrize("args,message", [
    (("x", "-k", "0"), "k: must be at least 1, got 0"),
    (("x", "--layers", "LOCAL"), "layers[0]: must be exactly one of"),
    (("x", "--kind", ""), "filters.kind[0]: must be a non-empty string"),
    (("   ",), "query: must be a non-empty string"),
    (("--query-vec", "[true]"), "query_vec[0]: expected a number, got true"),
    (("--query-vec", "[1.0]", "--mode", "lexical"), "cannot drive a lexical search"),
])
def test_search_request_errors(sediment: Runner, tmp_path: Path, args: tuple[str, ...],
                               message: str) -> None:
    store = make_store(tmp_path / "store")
    r = sediment("search", *args, "--dir", str(store))
    assert r.code == 1, (r.out, r.err)
    assert r.err.startswith("Error: ") and message in r.err and "Traceback" not in r.err
    assert r.err.count("\n") == 1


def test_write_request_errors(sediment: Runner, tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    r = sediment("write", "--dir", str(store), "--kind", "note", "--content", " ",
                 "--confidence", "2")
    assert r.code == 1
    assert r.err == ("Error: content: must be a non-empty string (not only whitespace); "
                     "confidence: must be at most 1.0 (the maximum), got 2.0 (a number)\n")
