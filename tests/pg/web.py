"""The web page over a team server: the web tests' layers, proposals, memories and context,
pushed into and written to a real PostgreSQL through a real ``sediment serve --store``.

The base is the MCP tests' store pushed with ``sediment push``; proposals are written by
a real MCP client with a writer's token; memories and context items are the writer's.
Reviewers sign in with tokens minted in the database by ``sediment token create``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests import zygote
from tests.conftest import SEDIMENT
from tests.mcp.conftest import make_store
from tests.pg.team import TeamServer, mint, team_server
from tests.web.conftest import CONTEXT, MEMORIES, PROPOSALS, call_tools, write_and_propose


@dataclass
class PgSite:
    server: TeamServer
    url: str
    """The store URL (``--store``)."""
    root: Path
    base: str
    proposals: list[int]
    memories: list[str]
    """Ids of ``MEMORIES``, saved by :attr:`writer`."""
    tokens: dict[str, str]
    """Token of each actor: alice and bob review, rita reads, walt writes."""

    writer = "walt"


ROLES = {"alice": "reviewer", "bob": "reviewer", "rita": "reader", "walt": "writer"}


@contextmanager
def pg_site(url: str, tmp_path: Path) -> Iterator[PgSite]:
    root = make_store(tmp_path / "store")
    docs = root / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Releases: every Tuesday from main.\n")
    (docs / "b.md").write_text("# Billing\n\nAll billing calls need X-Account.\n")
    subprocess.run([zygote.script(SEDIMENT),
                    "push", "--store", url, "--dir", str(root)], check=True,
                   capture_output=True, timeout=120)
    tokens = {actor: mint(url, actor, role) for actor, role in ROLES.items()}
    with team_server(url, root) as srv:
        ids = write_and_propose(srv.mcp, tokens["walt"])
        saved = call_tools(srv.mcp, tokens["walt"], [*MEMORIES, *CONTEXT])
        yield PgSite(srv, url, root, srv.base, ids,
                     [str(m["id"]) for m in saved[:len(MEMORIES)]], tokens)


__all__ = ["PROPOSALS", "PgSite", "pg_site"]
