"""Compaction into a new base, and rotation of the layers above it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from sediment.errors import NotFoundError, SchemaMismatchError, ValidationError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.review import accept, compact
from sediment.search import SearchRequest, search
from sediment.store import HUMAN_WRITABLE, LayerName, LayerSet, NewChunk
from sediment.store.events import FORGET, event_content
from tests.review.helpers import EMB, agent_propose, agent_write, make_base


def _reviewed(tmp_path: Path, etype: str = "f32") -> LayerSet:
    """Base 1..3; delta chunk accepted into user; an override of base 2 in user."""
    make_base(tmp_path, etype=etype)
    ls = LayerSet.from_directory(tmp_path)
    _, pid = agent_propose(ls, "Feature flags live in LaunchDarkly.")
    accept(ls, [pid])
    text = "The deploy job pushes containers to production every night."
    ls.append(LayerName.USER, [NewChunk("canonical", text, "human", 1.0, ("docs/guide.md:2",),
                                        0, id=2)],
              EMB.embed([text]), profile=EMB.profile.to_dict(), allowed=HUMAN_WRITABLE)
    return ls


@pytest.mark.parametrize("etype", ["f32", "i8"])
def test_user_overrides_by_id_and_vectors_are_copied(tmp_path: Path, etype: str) -> None:
    _reviewed(tmp_path, etype)
    base, user = tmp_path / "AGENTS.db", tmp_path / "AGENTS.user.db"
    before = {p: p.read_bytes() for p in (base, user)}
    report = compact(base, user, tmp_path / "AGENTS.db.new")
    assert {p: p.read_bytes() for p in before} == before  # inputs untouched
    new = LayerFile.open(tmp_path / "AGENTS.db.new")
    assert new.validate() == [] and new.element_type == etype
    ub, uf = LayerFile.open(base), LayerFile.open(user)
    assert list(new.ids) == sorted({*ub.ids.tolist(), *uf.ids.tolist()})
    assert (report.from_base, report.from_user, report.overridden) == (2, 2, 1)
    two = new.get(2)
    assert two is not None and "production" in two.content
    for cid in new.ids.tolist():
        src = uf if uf.get(cid) is not None else ub
        got = np.asarray(new.embeddings[new.rows[new.id_index[cid]]])
        want = np.asarray(src.embeddings[src.rows[src.id_index[cid]]])
        assert np.array_equal(got, want)  # bit for bit, never re-embedded
    accepted = next(c for c in new.chunks() if c.content.startswith("Feature"))
    assert accepted.author == "human" and accepted.sources[0] == accepted.id
    md = new.metadata or {}
    assert md["embedding_profile"] == EMB.profile.to_dict()
    assert md["id_high_water"] >= max(int(ub.ids.max()), int(uf.ids.max()))
    assert set(md["compacted_from"]) == {"base_sha256", "user_sha256"}


def test_the_same_inputs_give_the_same_bytes(tmp_path: Path) -> None:
    _reviewed(tmp_path)
    base, user = tmp_path / "AGENTS.db", tmp_path / "AGENTS.user.db"
    a = compact(base, user, tmp_path / "a.db")
    b = compact(base, user, tmp_path / "b.db")
    assert a.sha256 == b.sha256 == hashlib.sha256((tmp_path / "b.db").read_bytes()).hexdigest()


def test_events_are_dropped_with_what_they_hide_unless_kept(tmp_path: Path) -> None:
    ls = _reviewed(tmp_path)
    ls.append(LayerName.USER, [NewChunk(FORGET, event_content(event="forget", context_id=3,
                                                              reason="obsolete"),
                                        "human", 1.0, (3,))],
              np.zeros((1, EMB.profile.dim), dtype=np.float32), profile=None,
              allowed=HUMAN_WRITABLE)
    base, user = tmp_path / "AGENTS.db", tmp_path / "AGENTS.user.db"
    dropped = compact(base, user, tmp_path / "dropped.db")
    assert dropped.events_dropped == 1 and dropped.hidden_dropped == 1
    new = LayerFile.open(tmp_path / "dropped.db")
    assert new.get(3) is None and not any(k.startswith("meta.") for k in
                                          (c.kind for c in new.chunks()))
    kept = compact(base, user, tmp_path / "kept.db", keep_events=True)
    assert kept.events_dropped == 0 and kept.hidden_dropped == 0
    assert LayerFile.open(tmp_path / "kept.db").get(3) is not None


def test_out_must_be_new(tmp_path: Path) -> None:
    _reviewed(tmp_path)
    base, user = tmp_path / "AGENTS.db", tmp_path / "AGENTS.user.db"
    for out in (base, user):
        with pytest.raises(ValidationError, match="one of the inputs"):
            compact(base, user, out)
    with pytest.raises(ValidationError, match="one of the inputs"):
        compact(base, user, tmp_path / "AGENTS.delta.db", rotate=True,
                delta=tmp_path / "AGENTS.delta.db")
    (tmp_path / "taken.db").write_bytes(b"keep me")
    with pytest.raises(ValidationError, match="--force"):
        compact(base, user, tmp_path / "taken.db")
    assert (tmp_path / "taken.db").read_bytes() == b"keep me"
    compact(base, user, tmp_path / "taken.db", force=True)
    assert LayerFile.open(tmp_path / "taken.db").chunk_count == 4
    with pytest.raises(NotFoundError, match="user layer to compact"):
        compact(base, tmp_path / "nope.db", tmp_path / "x.db")


def test_schema_mismatch(tmp_path: Path) -> None:
    make_base(tmp_path)
    make_base(tmp_path, etype="i8", name="AGENTS.user.db")
    with pytest.raises(SchemaMismatchError, match="do not share a schema"):
        compact(tmp_path / "AGENTS.db", tmp_path / "AGENTS.user.db", tmp_path / "out.db")


def test_rotation_archives_and_resets_without_reusing_ids(tmp_path: Path) -> None:
    ls = _reviewed(tmp_path)
    _, _pending = agent_propose(ls, "Still pending at rotation.")
    user, delta = tmp_path / "AGENTS.user.db", tmp_path / "AGENTS.delta.db"
    old = {p: p.read_bytes() for p in (user, delta)}
    top = ls.high_water()
    report = compact(tmp_path / "AGENTS.db", user, tmp_path / "AGENTS.db.new", rotate=True,
                     delta=delta, stamp="2026-11-22T123456")
    assert report.pending_archived == 1
    archives = {Path(r.layer).name: Path(r.archive) for r in report.rotated}
    assert archives["AGENTS.user.db"].name == "AGENTS.user.2026-11-22T123456.db"
    assert archives["AGENTS.delta.db"].name == "AGENTS.delta.2026-11-22T123456.db"
    for p in (user, delta):
        assert archives[p.name].read_bytes() == old[p]
        reset = LayerFile.open(p)
        assert reset.chunk_count == 0 and reset.validate() == []
        assert reset.dim == EMB.profile.dim
        assert reset.embedding_profile == EMB.profile.to_dict()
        assert (reset.metadata or {})["id_high_water"] >= top
    (tmp_path / "AGENTS.db.new").replace(tmp_path / "AGENTS.db")
    fresh = LayerSet.from_directory(tmp_path)
    assert agent_write(fresh, "After the rotation.") == top + 1
    again = compact(tmp_path / "AGENTS.db", user, tmp_path / "second.db", rotate=True,
                    delta=delta, stamp="2026-11-22T123456")
    assert [Path(r.archive).name for r in again.rotated] == [
        "AGENTS.2026-11-22T123456-1.db", "AGENTS.user.2026-11-22T123456-1.db",
        "AGENTS.delta.2026-11-22T123456-1.db"]


def _accepted_shown(directory: Path) -> bool:
    ls = LayerSet.from_directory(directory)
    hits = search(ls, SearchRequest(text="Feature flags LaunchDarkly", k=5, mode="lexical"))
    return any(h.chunk.content == "Feature flags live in LaunchDarkly." for h in hits.hits)


def test_rotation_installs_the_new_base_so_nothing_accepted_goes_missing(
        tmp_path: Path) -> None:
    _reviewed(tmp_path)
    base, user = tmp_path / "AGENTS.db", tmp_path / "AGENTS.user.db"
    old_base = base.read_bytes()
    report = compact(base, user, tmp_path / "NEW.db", rotate=True,
                     delta=tmp_path / "AGENTS.delta.db", stamp="2026-11-22T123456")
    assert base.read_bytes() == (tmp_path / "NEW.db").read_bytes()
    assert (tmp_path / "AGENTS.2026-11-22T123456.db").read_bytes() == old_base
    assert report.rotated[0].installed and report.rotated[0].layer == str(base)
    assert LayerFile.open(user).chunk_count == 0
    assert _accepted_shown(tmp_path)


def test_rotation_run_again_never_writes_a_base_missing_chunks(tmp_path: Path) -> None:
    _reviewed(tmp_path)
    base, user, delta = (tmp_path / n for n in ("AGENTS.db", "AGENTS.user.db",
                                                 "AGENTS.delta.db"))
    compact(base, user, tmp_path / "NEW.db", rotate=True, delta=delta)
    again = compact(base, user, tmp_path / "NEW.db", rotate=True, delta=delta)
    new = {c.content for c in LayerFile.open(tmp_path / "NEW.db").chunks()}
    assert "Feature flags live in LaunchDarkly." in new and again.chunks == len(new)
    assert base.read_bytes() == (tmp_path / "NEW.db").read_bytes()
    assert _accepted_shown(tmp_path)
    (tmp_path / "other.db").write_bytes(b"someone else's file")
    with pytest.raises(ValidationError, match="not what an interrupted rotation left"):
        compact(base, user, tmp_path / "other.db", rotate=True, delta=delta)
    with pytest.raises(ValidationError, match="--out must be a file"):
        compact(base, user, Path("-"), rotate=True, delta=delta)


def test_i8_layers_with_different_scales_are_requantised(tmp_path: Path) -> None:
    make_base(tmp_path, etype="i8")
    text = ["A user chunk quantised with its own scale."]
    md = {"v": 1, "embedding_profile": EMB.profile.to_dict()}
    (tmp_path / "AGENTS.user.db").write_bytes(encode_layer(
        [Chunk(9, "note", text[0], "human", 1.0, 0)], EMB.embed(text), element_type="i8",
        quant_scale=0.5 / 127, metadata=md))
    report = compact(tmp_path / "AGENTS.db", tmp_path / "AGENTS.user.db", tmp_path / "o.db")
    assert report.requantized == 1
    new = LayerFile.open(tmp_path / "o.db")
    assert new.quant_scale == pytest.approx(1 / 127)
    assert np.allclose(new.vector(new.id_index[9]), EMB.embed(text)[0], atol=2 / 127)


@pytest.mark.parametrize("etype", ["f32", "i8"])
def test_kept_events_keep_sharing_one_zero_row(tmp_path: Path, etype: str) -> None:
    ls = _reviewed(tmp_path, etype)
    for cid in (1, 3):
        ls.append(LayerName.USER, [NewChunk(FORGET, event_content(event="forget", context_id=cid,
                                                                  reason="obsolete"),
                                            "human", 1.0, (cid,))],
                  np.zeros((1, EMB.profile.dim), dtype=np.float32), profile=None,
                  allowed=HUMAN_WRITABLE)
    user = LayerFile.open(tmp_path / "AGENTS.user.db")
    events = [i for i, c in enumerate(user.chunks()) if c.kind.startswith("meta.")]
    assert len({int(user.rows[i]) for i in events}) == 1  # the append shared the zero row
    compact(tmp_path / "AGENTS.db", tmp_path / "AGENTS.user.db", tmp_path / "kept.db",
            keep_events=True)
    new = LayerFile.open(tmp_path / "kept.db")
    assert new.validate() == []
    kinds = [c.kind for c in new.chunks()]
    rows = [int(r) for r in new.rows]
    event_rows = {r for r, k in zip(rows, kinds, strict=True) if k.startswith("meta.")}
    assert len(event_rows) == 1 and not np.asarray(new.embeddings[event_rows.pop()]).any()
    assert len(set(rows)) == new.chunk_count - sum(k.startswith("meta.") for k in kinds) + 1
