"""A served store with proposals for the review page's tests: the web tests' three written
over MCP, plus a batch of one kind, one to edit, one to race for, a hostile one and a 5 MB
one written to the layer files directly (an MCP write is capped at 100,000 characters)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from sediment.embed import HashEmbedder
from sediment.ops.propose import propose
from sediment.ops.requests import WriteRequest, parse
from sediment.ops.write import write_context
from sediment.store import LayerName, LayerSet, NewChunk
from tests.mcp.conftest import stop
from tests.web.conftest import Site, start_site

HOSTILE = ("# Release notes\n\n<script>document.title='pwned'</script>\n\n"
           "[click](javascript:alert(1)) \u202eevil\u202c \x1b[2J\x1b[31mred\n\n"
           "<img src=x onerror=alert(1)>")
BIG = "A five megabyte finding.\n" + "lorem ipsum dolor sit amet " * 190_000


@dataclass
class Seeded:
    site: Site
    ls: LayerSet
    batch: list[int]
    edit: int
    race: int
    hostile: int
    big: int


def _propose(ls: LayerSet, text: str, kind: str, actor: str, confidence: float = 0.6) -> int:
    cid = write_context(ls, HashEmbedder(), parse(WriteRequest, {
        "content": text, "kind": kind, "confidence": confidence, "scope": "delta"}),
        actor=actor)
    return propose(ls, cid, actor=actor).proposal_id


@contextmanager
def seeded_site(tmp: Path) -> Iterator[Seeded]:
    """The site, started in a home of its own (a module-scoped fixture runs before the
    per-test isolation of tests/conftest.py)."""
    with pytest.MonkeyPatch.context() as mp:  # the module's server gets a home of its own
        for var, sub in (("SEDIMENT_DATA_DIR", "data"), ("SEDIMENT_CACHE_DIR", "cache"),
                         ("SEDIMENT_USER_CONFIG", "config.toml")):
            mp.setenv(var, str(tmp / "home" / sub))
        for var in ("SEDIMENT_ACTOR", "SEDIMENT_TOKENS_FILE", "SEDIMENT_EMBEDDER"):
            mp.delenv(var, raising=False)
        site = start_site(tmp)
        try:
            ls = LayerSet.from_directory(site.store)
            batch = [_propose(ls, f"Batch finding {i}: cache keys include the tenant.",
                              "batchkind", "carol") for i in range(3)]
            edit = _propose(ls, "Deploys freze on Fridays.", "convention", "dave", 0.4)
            race = _propose(ls, "The cache is flushed hourly.", "note", "erin")
            hostile = _propose(ls, HOSTILE, "hostile", "mallory")
            [big_id] = ls.append(LayerName.DELTA, [NewChunk("bigtext", BIG, "mcp", 0.5)],
                                 HashEmbedder().embed(["big"]), profile=None)
            big = propose(ls, big_id, actor="mallory").proposal_id
            yield Seeded(site, ls, batch, edit, race, hostile, big)
        finally:
            stop(site.server.process)
