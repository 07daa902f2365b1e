"""Property tests for the readers and writers: whatever a writer produces, its reader
reads back as the same items, and the JSON stream reader agrees with ``json`` on every
shape and block size."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sediment.interop import basic_memory, jsonstream, mcp_memory, mem0
from sediment.interop.blocks import blocks, render
from sediment.interop.model import Item, Reading
from sediment.memory import Memory, MemoryRef, Scope
from sediment.memory.decision import normalise

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                           allow_infinity=False)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)


def as_memories(items: list[Item], actor: str = "ada") -> list[Memory]:
    """Memories as the service would give them back for these items."""
    return [Memory(MemoryRef("u", i + 1), it.content, it.category, it.actor or actor,
                   Scope.USER, it.learned, 1.0, 0, "human", it.context, origin=it.origin)
            for i, it in enumerate(items)]


def read_all(reader: Any, path: Path) -> list[Item]:
    root = path if path.is_dir() else path.parent
    return list(reader(path, root, Reading()))


@SETTINGS
@given(values=st.lists(json_values, max_size=6),
       shape=st.sampled_from(["lines", "array", "results"]),
       block=st.integers(1, 40), pad=st.sampled_from(["", " ", "\n", "\n\n  "]))
def test_json_records_in_every_shape_and_block_size(tmp_path: Path, values: list[Any],
                                                    shape: str, block: int, pad: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonstream, "_READ", block)
    if shape == "lines":  # records are objects (a line holding an array reads as a document)
        values = [{"v": v} for v in values]
    dumped = [json.dumps(v) for v in values]
    if shape == "lines":
        text = pad + "\n".join(dumped) + "\n"
    elif shape == "array":
        text = pad + "[" + (",\n" + pad).join(dumped) + "]" + pad
    else:
        text = '{"results": [' + ",\n".join(dumped) + '],\n "total": 3, "next": {"a": [1]}}'
    path = tmp_path / "x.json"
    path.write_text(text)
    got = list(jsonstream.records(path, "x.json"))
    assert [v for _, v in got] == values
    lines = [line for line, _ in got]
    assert lines == sorted(lines)


names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20) \
    .filter(lambda s: s.strip() != "")


@SETTINGS
@given(entities=st.dictionaries(names, st.tuples(names, st.lists(names, max_size=3,
                                                                 unique=True)),
                                max_size=4),
       relations=st.lists(st.tuples(names, names, names), max_size=4, unique=True))
def test_mcp_memory_write_then_read_is_the_same_graph(
        tmp_path: Path, entities: dict[str, tuple[str, list[str]]],
        relations: list[tuple[str, str, str]]) -> None:
    lines = [{"type": "entity", "name": n, "entityType": t, "observations": obs}
             for n, (t, obs) in entities.items()]
    lines += [{"type": "relation", "from": a, "to": b, "relationType": r}
              for a, r, b in relations if a in entities]
    src = tmp_path / "g.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    items = read_all(mcp_memory.read, src)
    written = mcp_memory.write(as_memories(items))
    assert [json.loads(x) for x in written.decode().split("\n") if x] == lines
    src.write_bytes(written)
    assert read_all(mcp_memory.read, src) == items


ids = st.text("abcdef0123456789-", min_size=1, max_size=12)


@SETTINGS
@given(records=st.lists(st.fixed_dictionaries(
    {"memory": names.map(str.strip).filter(bool)},
    optional={"id": ids, "user_id": st.text("abc@.-_XYZ9", min_size=1, max_size=12),
              "agent_id": ids, "run_id": ids, "hash": ids, "created_at": ids,
              "updated_at": ids, "metadata": st.dictionaries(st.text(max_size=5),
                                                             json_values, max_size=3),
              "categories": st.lists(st.text(max_size=8), max_size=3)}), max_size=5))
def test_mem0_records_come_back_as_they_went_in(tmp_path: Path,
                                               records: list[dict[str, Any]]) -> None:
    src = tmp_path / "m.json"
    src.write_text(json.dumps({"results": records}))
    items = read_all(mem0.read, src)
    for it, rec in zip(items, records, strict=True):
        assert it.actor == (mem0.actor_name(rec.get("user_id") or rec.get("agent_id"))
                            if rec.get("user_id") or rec.get("agent_id") else None)
    back = json.loads(mem0.write(as_memories(items)))["results"]
    for got, rec in zip(back, records, strict=True):
        assert {k: v for k, v in got.items() if k != "id"} == \
            {k: v for k, v in rec.items() if k != "id"}
        assert got["id"] == rec.get("id", got["id"])


words = st.text("abcdefghij KLMN,;:'\"()#", min_size=1, max_size=25).map(str.strip) \
    .filter(lambda s: bool(s) and not s.startswith("#"))
categories = st.sampled_from(["fact", "tech", "decision", "preference", "Idea"])


@SETTINGS
@given(title=words.filter(lambda s: "'" not in s or '"' not in s),
       prose=st.lists(words, max_size=3),
       observations=st.lists(st.tuples(categories, words), max_size=4, unique=True),
       relations=st.lists(st.tuples(st.text("abc_", min_size=1, max_size=8), words),
                          max_size=3, unique=True))
def test_basic_memory_note_write_then_read(tmp_path: Path, title: str, prose: list[str],
                                          observations: list[tuple[str, str]],
                                          relations: list[tuple[str, str]]) -> None:
    relations = [(r, t.replace("[", "").replace("]", "")) for r, t in relations
                 if t.replace("[", "").replace("]", "").strip()]
    body = [f"# {title}", *prose, "## Observations",
            *(f"- [{c}] {t}" for c, t in observations), "## Relations",
            *(f"- {r} [[{t}]]" for r, t in relations)]
    notes = Path(tempfile.mkdtemp(dir=tmp_path))  # tmp_path is shared by the examples
    (notes / "n.md").write_text("\n\n".join(body) + "\n")
    items = read_all(basic_memory.read, notes)
    got_obs = [(i.origin["category"], i.origin["text"]) for i in items
               if i.origin["part"] == "observation"]
    assert got_obs == observations
    got_rel = [(i.origin["relation"], i.origin["target"]) for i in items
               if i.origin["part"] == "relation"]
    assert got_rel == relations
    files = basic_memory.write(as_memories(items))
    for rel, data in files.items():
        (notes / rel).write_bytes(data)
    again = read_all(basic_memory.read, notes)
    # Two observations can read as the same memory (": :" under two categories); the
    # service keeps one, so both sides are compared as it stores them.
    once = list(dict.fromkeys((i.content, i.category) for i in items))
    assert list(dict.fromkeys((i.content, i.category) for i in again)) == once


line_text = st.text("abcdefgh ,.;:!?`'\"()/@-", min_size=1, max_size=30).map(str.strip) \
    .filter(lambda s: bool(s) and s[0] not in "-*+#`~0123456789" and not s.startswith("@"))
piece = st.one_of(
    st.tuples(st.just("heading"), st.integers(1, 3), line_text),
    st.tuples(st.just("item"), st.sampled_from(["-", "*", "1."]),
              st.lists(line_text, min_size=1, max_size=3)),
    st.tuples(st.just("para"), st.lists(line_text, min_size=1, max_size=3)),
    st.tuples(st.just("fence"), st.lists(line_text, max_size=3)),
)


def _markdown(pieces: list[tuple[Any, ...]]) -> str:
    out: list[str] = []
    for p in pieces:
        if p[0] == "heading":
            out.append("#" * p[1] + " " + p[2])
        elif p[0] == "item":
            out.append(f"{p[1]} {p[2][0]}" + "".join(f"\n   {x}" for x in p[2][1:]))
        elif p[0] == "para":
            out.append("\n".join(p[1]))
        else:
            out.append("```\n" + "\n".join(p[1]) + "\n```")
    return "\n\n".join(out) + "\n"


@SETTINGS
@given(pieces=st.lists(piece, max_size=8))
def test_blocks_render_then_read_gives_the_same_memories(pieces: list[tuple[Any, ...]]
                                                         ) -> None:
    first = blocks(_markdown(pieces).split("\n"))
    assert len(first) == sum(1 for p in pieces if p[0] != "heading")
    again = blocks(render([(b.headings, b.text) for b in first]).split("\n"))
    assert [normalise(b.content) for b in again] == [normalise(b.content) for b in first]
    assert [b.headings for b in again] == [b.headings for b in first]


@SETTINGS
@given(text=st.text(max_size=200))
def test_blocks_never_fail_and_keep_every_line(text: str) -> None:
    lines = text.split("\n")
    got = blocks(lines)
    kept = "\n".join(b.text for b in got)
    for line in lines:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            assert line.rstrip("\r") in kept or stripped in kept
