"""The queue's rows and a proposal's markup, without a server: titles, short ids, filters,
sorting, ages, where focus goes after a decision, the facts cached per store change, the
sanitised Markdown and the word diff."""

from __future__ import annotations

from pathlib import Path

from sediment.embed import HashEmbedder
from sediment.format import Chunk
from sediment.ops.propose import propose
from sediment.ops.requests import WriteRequest, parse
from sediment.ops.write import write_context
from sediment.server.web._markup import markdown, word_diff
from sediment.server.web._review import (
    Facts,
    Filters,
    Queue,
    Row,
    age,
    facets,
    next_after,
    short_ids,
    title_of,
)
from sediment.store import LayerName, LayerSet
from tests.mcp.conftest import make_store

HOUR = 3_600_000
NOW = 1_000 * HOUR


def _row(pid: int, kind: str = "note", actor: str = "ann", at: int = NOW,
         confidence: float = 0.5, text: str = "x", facts: Facts | None = None) -> Row:
    chunk = Chunk(pid + 1000, kind, text, "mcp", confidence, at, ())
    return Row(pid, pid + 1000, title_of(text), kind, actor, "delta", at, confidence, chunk,
               facts or Facts(), str(pid))


def test_a_title_is_the_first_heading_else_the_first_line() -> None:
    assert title_of("intro line\n\n## Billing rules\nbody") == "Billing rules"
    assert title_of("\n\n  - first point\nsecond") == "first point"
    assert title_of("") == "(empty)"
    long = title_of("word " * 40)
    assert len(long) == 90 and long.endswith("…")


def test_short_ids_are_the_shortest_unique_tails() -> None:
    got = short_ids([2147483806, 2147483807, 2147484806, 12])
    assert got == {2147483806: "3806", 2147483807: "807", 2147484806: "4806", 12: "12"}


def test_filters_select_and_sort_and_ignore_what_they_do_not_know() -> None:
    conflicting = Facts(overrides=((LayerName.BASE,
                                    Chunk(1001, "note", "other", "human", 1.0, 0, ())),))
    rows = [_row(1, "note", "ann", NOW - 2 * HOUR, 0.9, "Deploy on Fridays", conflicting),
            _row(2, "decision", "bob", NOW - 10 * 24 * HOUR, 0.2, "Use tabs"),
            _row(3, "note", "bob", NOW - 30 * 60_000, 0.5, "Deploy freeze")]
    assert rows[0].conflict and rows[0].overrides and not rows[0].near_duplicate

    def ids(**q: str) -> list[int]:
        return [r.proposal_id for r in Filters.of(q).apply(rows, NOW)]

    assert ids() == [1, 2, 3]  # the snapshot's order (newest first) is kept
    assert ids(kind="note") == [1, 3] and ids(author="bob") == [2, 3]
    assert ids(conflict="yes") == [1] and ids(conflict="no") == [2, 3]
    assert ids(age="1h") == [3] and ids(age="24h") == [1, 3] and ids(age="old") == [2]
    assert ids(q="DEPLOY") == [1, 3] and ids(q="#2") == [2]
    assert ids(sort="oldest") == [2, 1, 3] and ids(sort="confidence") == [2, 3, 1]
    assert ids(sort="author") == [1, 3, 2]
    assert ids(age="forever", sort="sideways", layer="base") == [1, 2, 3]
    assert Filters.of({"kind": "note", "sort": "oldest", "page": "2"}).items() == [
        ("kind", "note"), ("sort", "oldest")]
    assert dict(facets(rows)["author"]) == {"ann": 1, "bob": 2}


def test_ages_read_like_a_person_says_them() -> None:
    assert age(NOW - 3 * HOUR - 5, NOW) == "3 h ago"
    assert age(NOW - 90_000, NOW) == "1 min ago" and age(NOW, NOW) == "just now"
    assert age(NOW - 49 * HOUR, NOW) == "2 d ago"


def test_focus_goes_to_the_next_undecided_row() -> None:
    rows = [_row(i) for i in range(1, 6)]
    assert next_after(rows, {2}) == rows[2]
    assert next_after(rows, {2, 3}) == rows[3]
    assert next_after(rows, {5}) == rows[3]
    assert next_after(rows, {1, 2, 3, 4, 5}) is None


def test_the_snapshot_is_built_once_per_change(tmp_path: Path) -> None:
    ls = LayerSet.from_directory(make_store(tmp_path / "store"))
    emb = HashEmbedder()

    def add(text: str, actor: str) -> int:
        cid = write_context(ls, emb, parse(WriteRequest, {
            "content": text, "kind": "note", "confidence": 0.6, "scope": "delta"}),
            actor=actor)
        return propose(ls, cid, actor=actor).proposal_id

    first = add("Requests to /billing MUST NOT include the X-Account header.", "ann")
    queue = Queue()
    snap = queue.snapshot(ls)
    assert queue.snapshot(ls) is snap
    [row] = snap.rows
    assert (row.proposal_id, row.actor, row.kind) == (first, "ann", "note")
    assert row.near_duplicate and row.conflict  # base:2 says the opposite
    second = add("A new finding about caching.", "bob")
    again = queue.snapshot(ls)
    assert again is not snap and [r.proposal_id for r in again.rows] == [second, first]
    assert not again.by_id[second].conflict


def test_markdown_is_rendered_and_nothing_an_agent_writes_becomes_markup() -> None:
    got = str(markdown("# Title\n\n*em* `code`\n\n<script>alert(1)</script>\n\n"
                       "[x](javascript:alert(1)) [ok](https://example.org) ![i](/x.png)\n\n"
                       "<b onmouseover=alert(1)>b</b> \u202etpecca\x1b[31m").html)
    assert "<h3>Title</h3>" in got and "<em>em</em>" in got and "<code>code</code>" in got
    assert "<script" not in got and "&lt;script&gt;" in got
    assert 'href="javascript' not in got and 'href="https://example.org"' in got
    assert "<img" not in got and "<b " not in got and "&lt;b onmouseover" in got
    assert "\u202e" not in got and "\\u202e" in got and "\x1b" not in got and "\\x1b" in got
    cut = markdown("a" * 10, limit=4)
    assert cut.cut and (cut.shown, cut.total) == (4, 10)


def test_the_word_diff_marks_what_changed() -> None:
    segs = word_diff("Requests MUST include the header.", "Requests MUST NOT include it.")
    assert segs is not None
    assert [(s.op, s.text) for s in segs] == [
        ("same", "Requests MUST "), ("ins", "NOT "), ("same", "include "),
        ("del", "the header."), ("ins", "it.")]
    assert word_diff("a " * 30_000, "b") is None
