"""JSON Lines export and import: lossless round trips, and every line checked first."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sediment.errors import PermissionDeniedError, SchemaMismatchError, ValidationError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.review import export_lines, import_file, parse
from sediment.store import LayerName, LayerSet
from tests.review.helpers import EMB, agent_propose, agent_write, make_base


def _export_text(path: Path) -> str:
    return "".join(line + "\n" for line in export_lines(path))



def _delta(tmp_path: Path, etype: str = "f32") -> Path:
    make_base(tmp_path, etype=etype)
    ls = LayerSet.from_directory(tmp_path)
    agent_write(ls, "Unicode survives: café, 東京, emoji 🚀, line\u2028separator.",
                sources=["docs/guide.md:1", 1], confidence=0.7)
    agent_propose(ls, "Proposed and exported with its event.", confidence=0.33)
    return tmp_path / "AGENTS.delta.db"


@pytest.mark.parametrize("etype", ["f32", "i8"])
def test_export_import_export_is_identical(tmp_path: Path, etype: str) -> None:
    text = _export_text(_delta(tmp_path, etype))
    head = json.loads(text.split("\n")[0])
    # the two chunks, the events recording their actor, and the proposal event
    assert head["format"] == "sediment.layer" and head["chunks"] == 5
    assert head["element_type"] == etype and head["embedding_profile"]["backend"] == "hash"
    assert '"confidence":0.7,' in text  # shortest float32 text, not 0.699999988...
    src = tmp_path / "delta.jsonl"
    src.write_text(text)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    report = import_file(LayerSet.from_directory(fresh), LayerName.DELTA, src)
    assert report.chunks == 5 and report.overrides == ()
    assert _export_text(fresh / "AGENTS.delta.db") == text
    got, want = LayerFile.open(fresh / "AGENTS.delta.db"), LayerFile.open(tmp_path /
                                                                         "AGENTS.delta.db")
    assert list(got.chunks()) == list(want.chunks())
    assert np.array_equal(np.asarray(got.embeddings), np.asarray(want.embeddings))


def _write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "in.jsonl"
    p.write_text("".join(line + "\n" for line in lines))
    return p


def _mutate(lines: list[str], n: int, **changes: object) -> list[str]:
    obj = json.loads(lines[n])
    for k, v in changes.items():
        if v is None:
            del obj[k]
        else:
            obj[k] = v
    out = list(lines)
    out[n] = json.dumps(obj)
    return out


@pytest.mark.parametrize("change,line,message", [
    (lambda ls: [*ls[:2], "{not json", *ls[3:]], 3, "not JSON"),
    (lambda ls: _mutate(ls, 2, author="robot"), 3, "author 'robot'"),
    (lambda ls: _mutate(ls, 3, confidence=1.5), 4, "confidence 1.5"),
    (lambda ls: _mutate(ls, 1, embedding=[0.0, 1.0]), 2, "list of 64 numbers"),
    (lambda ls: _mutate(ls, 2, id=json.loads(ls[1])["id"]), 3, "already appears on line 2"),
    (lambda ls: _mutate(ls, 1, kind=None), 2, "missing field(s) kind"),
    (lambda ls: _mutate(ls, 1, colour="red"), 2, "unknown field(s) colour"),
    (lambda ls: _mutate(ls, 1, sources=[0]), 2, "source chunk id 0"),
    (lambda ls: _mutate(ls, 0, format="csv"), 1, "header"),
    (lambda ls: _mutate(ls, 0, dim="big"), 1, "dim"),
    (lambda ls: ls[:3], 4, "announces 5 chunks but the file has 2"),
    (lambda ls: [*ls[:2], "", *ls[2:]], 3, "empty line"),
    (lambda ls: [*ls[:1], ls[1].replace('"id":', '"id":' + "9" * 5000 + ","
                                         '"x":', 1), *ls[2:]], 2, "too many digits"),
    (lambda ls: [*ls[:2], '{"id":' + "[" * 50_000, *ls[3:]], 3, "nested too deeply"),
    (lambda ls: ["[" * 50_000, *ls[1:]], 1, "nested too deeply"),
    (lambda ls: _mutate(ls, 2, content="a\ud800b"), 3, "content is not valid Unicode"),
    (lambda ls: _mutate(ls, 1, kind="k\udfff"), 2, "kind is not valid Unicode"),
    (lambda ls: _mutate(ls, 1, sources=["p\ud800:1"]), 2, "sources is not valid Unicode"),
])
def test_import_names_the_first_bad_line_and_writes_nothing(
        tmp_path: Path, change: object, line: int, message: str) -> None:
    lines = _export_text(_delta(tmp_path)).split("\n")[:-1]
    bad = _write(tmp_path, change(lines))  # type: ignore[operator]
    target = tmp_path / "t"
    target.mkdir()
    with pytest.raises(ValidationError) as err:
        import_file(LayerSet.from_directory(target), LayerName.USER, bad)
    assert f"in.jsonl:{line}: " in str(err.value) and message in str(err.value)
    assert "nothing was imported" in str(err.value)
    assert list(target.iterdir()) == []


def test_import_refuses_base_clashes_and_other_schemas(tmp_path: Path) -> None:
    src = tmp_path / "d.jsonl"
    src.write_text(_export_text(_delta(tmp_path)))
    ls = LayerSet.from_directory(tmp_path)
    with pytest.raises(ValidationError, match="immutable"):
        import_file(ls, LayerName.BASE, src)
    before = (tmp_path / "AGENTS.delta.db").read_bytes()
    with pytest.raises(ValidationError, match=r"5 id\(s\) already exist in the delta layer"):
        import_file(ls, LayerName.DELTA, src)
    assert (tmp_path / "AGENTS.delta.db").read_bytes() == before
    report = import_file(ls, LayerName.LOCAL, src)  # same ids one layer up: versions
    assert len(report.overrides) == 5
    other = tmp_path / "i8"
    other.mkdir()
    make_base(other, etype="i8")
    with pytest.raises(SchemaMismatchError, match="f32"):
        import_file(LayerSet.from_directory(other), LayerName.USER, src)
    with pytest.raises(PermissionDeniedError):
        LayerSet.from_directory(tmp_path).append(LayerName.BASE, [], np.zeros((0, 64)),
                                                 profile=None, allowed=[LayerName.BASE])


texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_layer_round_trips_through_jsonl(data: st.DataObject) -> None:
    ids = data.draw(st.lists(st.integers(1, 2**32 - 1), unique=True, max_size=8))
    chunks = [Chunk(i, data.draw(texts), data.draw(texts),
                    data.draw(st.sampled_from(["human", "mcp"])),
                    float(np.float32(data.draw(st.floats(0.0, 1.0)))),
                    data.draw(st.integers(0, 2**64 - 1)),
                    tuple(data.draw(st.lists(st.one_of(st.integers(1, 2**32 - 1), texts),
                                             max_size=3))))
              for i in ids]
    dim = data.draw(st.integers(1, 8))
    values = data.draw(st.lists(st.floats(-1e6, 1e6, width=32), min_size=len(ids) * dim,
                                max_size=len(ids) * dim))
    matrix = np.asarray(values, dtype=np.float32).reshape(len(ids), dim)
    md = {"v": 1, "embedding_profile": dict(EMB.profile.to_dict(), dim=dim)}
    blob = encode_layer(chunks, matrix, dim=dim, metadata=md)
    f = LayerFile.from_bytes(blob)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.db"
        p.write_bytes(blob)
        text = _export_text(p)
    parsed = parse(text)
    assert list(parsed.chunks) == list(f.chunks())
    assert np.array_equal(parsed.vectors, matrix)
    again = encode_layer(list(parsed.chunks), parsed.vectors, dim=dim, metadata=md)
    assert again == blob
