"""The three-way merge of append-only layers (``sediment.store.merge``), on layer sets
built in-process and merged as git would: a file both sides changed goes through
``merge_layer`` with the set's one plan, a file one side changed is taken from that side."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sediment.format import Chunk, LayerFile, encode_layer
from sediment.store import HUMAN_WRITABLE, LayerName, LayerSet, New, NewChunk
from sediment.store.events import DECISION, PROPOSAL, SUPERSEDE, event_content
from sediment.store.ids import WRITTEN_START
from sediment.store.merge import MergeConflict, Side, merge_layer, plan, read_version, rewrite_chunk

W = WRITTEN_START
PROFILE = {"backend": "hash", "model": "m", "revision": "1", "dim": 4, "output_norm": "l2"}
USER, DELTA = "AGENTS.user.db", "AGENTS.delta.db"


def vec(text: str) -> np.ndarray:
    rng = np.random.default_rng(abs(hash(text)) % 2**32)
    v = rng.standard_normal(4).astype(np.float32)
    return v / np.linalg.norm(v)


def add(d: Path, layer: LayerName, *items: NewChunk) -> list[int]:
    vecs = np.stack([np.zeros(4, np.float32) if i.kind.startswith("meta.") else vec(i.content)
                     for i in items])
    return LayerSet.from_directory(d).append(layer, list(items), vecs, profile=PROFILE,
                                             allowed=HUMAN_WRITABLE)


def note(text: str, *sources: int | str | New, at: int = 1000) -> NewChunk:
    return NewChunk("note", text, "mcp", 0.8, tuple(sources), created_at_ms=at)


def side(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.glob("AGENTS.*.db"))}


def git_merge(anc: Side, ours: Side, theirs: Side) -> dict[str, bytes]:
    """What git does with the driver: one plan for the set, the driver for each file both
    sides changed, the changed side's file otherwise."""
    out = {}
    for name in sorted(set(anc) | set(ours) | set(theirs)):
        a, o, t = anc.get(name, b""), ours.get(name, b""), theirs.get(name, b"")
        if o == t or t == a:
            out[name] = o
        elif o == a:
            out[name] = t
        else:
            layers = [read_version(x, name) for x in (a, o, t)]
            p = plan(anc, ours, theirs)
            out[name] = bytes(merge_layer(name, layers[0], layers[1], layers[2], p))
    return out


def materialise(files: dict[str, bytes], d: Path) -> LayerSet:
    d.mkdir()
    for name, data in files.items():
        (d / name).write_bytes(data)
        assert LayerFile.open(d / name).validate() == []
    return LayerSet.from_directory(d)


@pytest.fixture
def forked(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An ancestor set (a delta note and a user note) copied into two branches."""
    anc = tmp_path / "anc"
    anc.mkdir()
    add(anc, LayerName.DELTA, note("shared starting note"))
    add(anc, LayerName.USER, note("shared user note"))
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(anc, a)
    shutil.copytree(anc, b)
    return anc, a, b


def propose_and_accept(d: Path, text: str, at: int) -> tuple[int, int]:
    """A delta chunk, its proposal, the accept's copy in user and decision in delta, the
    same events the real services write."""
    (cid,) = add(d, LayerName.DELTA, note(text, at=at))
    (pid,) = add(d, LayerName.DELTA, NewChunk(
        PROPOSAL, event_content(event="propose", context_id=cid, target="user",
                                from_layer="delta"), "mcp", 1.0, (cid,), created_at_ms=at + 1))
    copy = LayerSet.from_directory(d).chunk(LayerName.DELTA, cid)
    assert copy is not None
    add(d, LayerName.USER, NewChunk(copy.kind, copy.content, "human", 1.0, (cid,),
                                    copy.created_at_ms, id=cid))
    add(d, LayerName.DELTA, NewChunk(
        DECISION, event_content(event="accept", proposal_id=pid, context_id=cid,
                                promoted_id=cid, reason="ok"), "human", 1.0, (pid, cid),
        created_at_ms=at + 2))
    return cid, pid


def contents(s: LayerSet, layer: LayerName) -> set[str]:
    return {c.content for c, _ in s.chunks(layer)}


def test_both_sides_appends_merge_into_one_valid_layer_whichever_way(
        forked: tuple[Path, Path, Path], tmp_path: Path) -> None:
    anc, a, b = forked
    a_cid, a_pid = propose_and_accept(a, "a: the cache is redis", 2000)
    b_cid, b_pid = propose_and_accept(b, "b: the queue is kafka", 3000)
    assert (a_cid, a_pid) == (b_cid, b_pid)  # both branches allocated the same ids
    add(b, LayerName.USER, note("b: tabs, not spaces", at=3100))
    ab = git_merge(side(anc), side(a), side(b))
    ba = git_merge(side(anc), side(b), side(a))
    assert ab == ba
    merged = materialise(ab, tmp_path / "m")
    assert {"a: the cache is redis", "b: the queue is kafka", "b: tabs, not spaces",
            "shared user note"} <= contents(merged, LayerName.USER)
    states = merged.proposals()
    assert sorted(s.status for s in states.values()) == ["accepted", "accepted"]
    for s in states.values():
        delta_chunk = merged.chunk(LayerName.DELTA, s.context_id)
        user_copy = merged.chunk(LayerName.USER, s.context_id)
        assert delta_chunk is not None and user_copy is not None
        assert delta_chunk.content == user_copy.content
        (decision,) = s.decisions
        assert json.loads(decision.chunk.content)["promoted_id"] == s.context_id
    ids = [c.id for layer in (LayerName.USER, LayerName.DELTA) for c, _ in merged.chunks(layer)]
    by_id: dict[int, set[str]] = {}
    for layer in (LayerName.USER, LayerName.DELTA):
        for c, _ in merged.chunks(layer):
            by_id.setdefault(c.id, set()).add(c.content)
    assert all(len(v) == 1 for v in by_id.values()), "one id, one chunk, across the set"
    assert merged.high_water() >= max(ids)


def test_an_identical_chunk_on_both_sides_is_kept_once(forked: tuple[Path, Path, Path]
                                                       ) -> None:
    anc, a, b = forked
    same = NewChunk("note", "both wrote this", "human", 1.0, (), 5000, id=W + 100)
    add(a, LayerName.USER, same)
    add(b, LayerName.USER, same)
    add(b, LayerName.USER, note("b only", at=5001))
    out = git_merge(side(anc), side(a), side(b))
    f = LayerFile.from_bytes(out[USER])
    texts = [c.content for c in f.chunks()]
    assert texts.count("both wrote this") == 1 and "b only" in texts


def test_a_chunk_changed_in_place_or_removed_is_a_conflict(forked: tuple[Path, Path, Path]
                                                            ) -> None:
    anc, a, b = forked
    add(a, LayerName.DELTA, note("a appends"))
    add(b, LayerName.DELTA, note("b appends"))
    old = LayerFile.open(b / DELTA)
    chunks = list(old.chunks())
    vectors = np.asarray(old.embeddings)[old.rows]
    edited = [Chunk(c.id, c.kind, "rewritten " + c.content if i == 0 else c.content,
                    c.author, c.confidence, c.created_at_ms, c.sources)
              for i, c in enumerate(chunks)]
    md = old.metadata
    ours = read_version(side(a)[DELTA], "ours")
    anc_f = read_version(side(anc)[DELTA], "ancestor")
    changed = read_version(bytes(encode_layer(edited, vectors, metadata=md)), "theirs")
    with pytest.raises(MergeConflict, match=r"changed in place on theirs"):
        merge_layer(DELTA, anc_f, ours, changed, plan({}, {}, {}))
    removed = read_version(bytes(encode_layer(chunks[1:], vectors[1:], metadata=md)), "t")
    with pytest.raises(MergeConflict, match=r"removed on theirs"):
        merge_layer(DELTA, anc_f, ours, removed, plan({}, {}, {}))


def test_the_base_layer_is_never_merged(forked: tuple[Path, Path, Path]) -> None:
    _, a, _ = forked
    f = read_version(side(a)[DELTA], "x")
    with pytest.raises(MergeConflict, match="recompile instead"):
        merge_layer("sub/AGENTS.db", f, f, f, plan({}, {}, {}))


def test_ids_each_side_wrote_where_the_other_changed_nothing_are_a_conflict(
        forked: tuple[Path, Path, Path]) -> None:
    anc, a, b = forked
    add(a, LayerName.USER, note("a writes user only"))
    add(b, LayerName.DELTA, note("b writes delta only"))
    add(a, LayerName.DELTA, note("a writes delta too"))
    add(b, LayerName.USER, note("b writes user too"))
    assert git_merge(side(anc), side(a), side(b))  # both files changed on both: fine
    anc2 = {USER: side(anc)[USER], DELTA: side(anc)[DELTA]}
    only_a = {USER: side(a)[USER], DELTA: anc2[DELTA]}
    only_b = {USER: anc2[USER], DELTA: side(b)[DELTA]}
    with pytest.raises(MergeConflict, match="a layer the other branch did not change"):
        plan(anc2, only_a, only_b)


def test_references_in_event_json_are_renumbered() -> None:
    c = Chunk(W + 5, SUPERSEDE, event_content(
        event="supersede", old_id=W + 1, new_id=W + 2, uses={str(W + 1): [1, 2]},
        related_to=[str(W + 2), "docs/a.md:3", W + 1], count=W + 1, proposal_id=7),
        "mcp", 1.0, 0, (W + 1, W + 2, "a.md:1"))
    got = rewrite_chunk(c, {W + 1: W + 11, W + 2: W + 12, W + 5: W + 15})
    data = json.loads(got.content)
    assert got.id == W + 15 and got.sources == (W + 11, W + 12, "a.md:1")
    assert (data["old_id"], data["new_id"], data["proposal_id"]) == (W + 11, W + 12, 7)
    assert data["uses"] == {str(W + 11): [1, 2]}
    assert data["related_to"] == [str(W + 12), "docs/a.md:3", W + 11]
    assert data["count"] == W + 1, "only id-named keys are ids"
    plain = Chunk(W + 6, "note", "see 2147483649", "mcp", 1.0, 0, ())
    assert rewrite_chunk(plain, {W + 1: W + 11}).content == "see 2147483649"


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from(["user", "delta"]),
                          st.integers(0, 3)), min_size=1, max_size=8))
def test_any_two_histories_merge_the_same_both_ways_and_keep_every_chunk(
        tmp_path_factory: pytest.TempPathFactory,
        steps: list[tuple[str, str, int]]) -> None:
    """Random appends on two branches (notes, and supersede events pointing at an earlier
    chunk of the same branch): merged both ways alike, nothing lost, every reference still
    names the chunk it named on its branch."""
    root = tmp_path_factory.mktemp("h")
    anc = root / "anc"
    anc.mkdir()
    add(anc, LayerName.DELTA, note("ancestor"))
    dirs = {s: root / s for s in "ab"}
    for d in dirs.values():
        shutil.copytree(anc, d)
    written: dict[str, list[tuple[int, str]]] = {"a": [], "b": []}
    for n, (s, layer, back) in enumerate(steps):
        text = f"{s} step {n}"
        mine = written[s]
        items = [note(text, at=n)]
        if back and mine:
            old_id, old_text = mine[-min(back, len(mine))]
            items.append(NewChunk(SUPERSEDE, "", "mcp", 1.0, (old_id, New(0)), n, data={
                "event": "supersede", "old_id": old_id, "new_id": New(0), "was": old_text}))
        ids = add(dirs[s], LayerName(layer), *items)
        mine.append((ids[0], text))
    sa, sb = side(dirs["a"]), side(dirs["b"])
    if not any(sa.get(n) != side(anc).get(n) != sb.get(n) != sa.get(n) for n in sa | sb):
        return  # no file changed on both sides: git merges without the driver
    try:
        ab = git_merge(side(anc), sa, sb)
    except MergeConflict as exc:
        assert "a layer the other branch did not change" in str(exc)
        return
    assert ab == git_merge(side(anc), sb, sa)
    merged = materialise(ab, root / "m")
    by_id = {c.id: c for layer in (LayerName.USER, LayerName.DELTA) if merged.layer(layer)
             for c, _ in merged.chunks(layer)}
    texts = {c.content for c in by_id.values()}
    assert {t for s in "ab" for _, t in written[s]} <= texts
    for c in by_id.values():
        if c.kind == SUPERSEDE:
            data = json.loads(c.content)
            assert by_id[data["old_id"]].content == data["was"]
            assert c.sources[0] == data["old_id"] and c.sources[1] == data["new_id"]
            assert by_id[data["new_id"]].created_at_ms == c.created_at_ms


def test_memory_handles_both_sides_gave_are_renamed_on_one_side(
        forked: tuple[Path, Path, Path], tmp_path: Path) -> None:
    anc, a, b = forked

    def save(d: Path, text: str, at: int) -> None:
        add(d, LayerName.USER, NewChunk("memory.fact", text, "human", 1.0, (), at),
            NewChunk("meta.memory", "", "human", 1.0, (New(0),), at, data={
                "event": "save", "memory_id": New(0), "actor": "ann", "scope": "global",
                "handle": "g1"}))

    save(a, "a remembers", 100)
    save(b, "b remembers", 200)
    ab = git_merge(side(anc), side(a), side(b))
    assert ab == git_merge(side(anc), side(b), side(a))
    user = {c.id: c for c in LayerFile.from_bytes(ab[USER]).chunks()}
    handles = {json.loads(c.content)["handle"]: user[json.loads(c.content)["memory_id"]].content
               for c in user.values() if c.kind == "meta.memory"}
    assert sorted(handles) == ["g1", "g2"]
    assert set(handles.values()) == {"a remembers", "b remembers"}
