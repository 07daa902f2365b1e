"""``sediment.open(postgresql_url)``: the same Store over a team server's project."""

from __future__ import annotations

from pathlib import Path

import sediment
from tests.pg.team import seed_project


def test_open_picks_the_backend_from_the_address(pg_url: str, tmp_path: Path) -> None:
    seed_project(pg_url, tmp_path)
    with sediment.open(pg_url, embedder="hash", actor="alice") as alice:
        assert alice.url == pg_url and alice.directory is None
        note = alice.write("Alice's deploy note.", kind="note", confidence=0.5)
        assert alice.get(note) is not None
        assert [h.id for h in alice.search("Alice's deploy note", k=1)] == [note]
        alice.save_memory("The user prefers tabs over spaces.", "preference")
        assert [m["content"] for m in alice.recall("tabs or spaces?")["memories"]][:1] == \
            ["The user prefers tabs over spaces."]
        alice.store_context("Fix: pin psycopg2-binary to 2.9 for the build.", "skill")
        assert "psycopg2-binary" in str(alice.relevant_context("psycopg2 build fails"))
    with sediment.open(pg_url, embedder="hash", actor="bob") as bob:
        assert bob.get(note) is None
        assert note not in [h.id for h in bob.search("Alice's deploy note")]
        assert bob.recall("tabs or spaces?")["memories"] == []
    with sediment.open(pg_url, embedder="hash") as owner:  # reads as the machine's owner
        assert owner.get(note) is not None
