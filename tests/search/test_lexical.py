"""The lexical side across layers: summed BM25 statistics, schemas, the persisted lexicon."""

from __future__ import annotations

import gc
import math
import weakref
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.embed import HashEmbedder
from sediment.errors import SchemaMismatchError, ValidationError
from sediment.format import Chunk, LayerFile, encode_layer
from sediment.search import BM25Index, SearchRequest, lexicon, search
from sediment.search.bm25 import Postings, query_stats
from sediment.search.layer_index import layer_index
from sediment.store import LayerName, LayerSet, NewChunk
from sediment.store.derived import derived

EMB = HashEmbedder(dim=16)
WORDS = ("deploy", "cluster", "staging", "nightly", "container", "database", "migration",
         "alembic", "server", "billing", "header", "account", "frontend", "vite", "vitest",
         "postgres", "json", "schema", "layer", "search", "kubernetes", "rollout", "canary")
ANSWER = "Kubernetes rollouts use a canary stage before the whole cluster."


def _whole_key(f: LayerFile) -> str:
    return lexicon.prefix_key(f, f.chunk_count)


def texts(n: int, seed: int = 3) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(WORDS[int(i)] for i in rng.integers(0, len(WORDS), int(rng.integers(4, 12))))
            for _ in range(n)]


def write_layer(path: Path, contents: list[str], *, dim: int = 16, first_id: int = 1,
                profile: bool = True) -> Path:
    chunks = [Chunk(first_id + i, "note", t, "human", 1.0, 0) for i, t in enumerate(contents)]
    emb = EMB if dim == 16 else HashEmbedder(dim=dim)
    md: dict[str, object] = {"v": 1}
    if profile:
        md["embedding_profile"] = emb.profile.to_dict()
    path.write_bytes(encode_layer(chunks, emb.embed(contents), metadata=md))
    return path


def lexical(ls: LayerSet, text: str, **kw: object) -> list[tuple[str, int, float]]:
    res = search(ls, SearchRequest(text=text, mode="lexical", k=50, **kw))  # type: ignore[arg-type]
    return [(h.layer.value, h.id, h.lexical_score or 0.0) for h in res.hits]


# -- statistics over the layers searched together (issue 13, item 14) ---------------------

def test_a_one_chunk_local_note_scores_like_the_same_text_in_base(tmp_path: Path) -> None:
    """With per-layer statistics the local copy scored against df = N = 1 (its IDF near
    zero) while the base copy was scored against the base's counts."""
    base = [*texts(200), ANSWER]
    write_layer(tmp_path / "AGENTS.db", base)
    write_layer(tmp_path / "AGENTS.local.db", [ANSWER], first_id=1000)
    ls = LayerSet.from_directory(tmp_path)
    got = {(layer, cid): score for layer, cid, score in lexical(ls, "kubernetes canary rollout")}
    local, in_base = got[("local", 1000)], got[("base", len(base))]
    assert local == in_base and local > 1.0
    hybrid = search(ls, SearchRequest(text="kubernetes canary rollout", k=5),
                    EMB.embed(["kubernetes canary rollout"])[0])
    scores = {(h.layer.value, h.id): h.lexical_score for h in hybrid.hits}
    assert scores[("local", 1000)] == scores[("base", len(base))]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join),
                min_size=1, max_size=12),
       st.integers(0, 12), st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
def test_layered_scores_equal_one_index_over_every_document(docs: list[str], cut: int,
                                                           query: list[str]) -> None:
    """Document frequencies, counts and lengths add up: scoring each part with the summed
    statistics gives the scores of one index over the concatenation."""
    cut = min(cut, len(docs))
    parts = [Postings.build(docs[:cut]), Postings.build(docs[cut:])]
    terms = BM25Index([]).analyze(" ".join(query))
    stats = query_stats(parts, terms)
    layered = np.concatenate([p.scores(stats) for p in parts])
    whole = BM25Index(docs).scores(terms)
    np.testing.assert_allclose(layered, whole, rtol=1e-6, atol=1e-7)


def test_bm25_still_matches_the_formula_with_repeated_and_unknown_terms() -> None:
    idx = BM25Index(["apple banana apple", "banana cherry", "durian"], k1=1.2, b=0.75)
    n, df, k1, b, avg = 3, 1, 1.2, 0.75, 2.0
    one = math.log(1 + (n - df + 0.5) / (df + 0.5)) * 2 * (k1 + 1) / (2 + k1 * (1 - b + b * 1.5))
    assert idx.scores("apple apple zebra")[0] == pytest.approx(2 * one, rel=1e-5)
    assert avg == 2.0 and idx.scores("zebra").tolist() == [0.0, 0.0, 0.0]


# -- one schema per query (issue 13, item 3) ---------------------------------------------

def mixed(tmp_path: Path) -> LayerSet:
    write_layer(tmp_path / "AGENTS.db", [*texts(20), ANSWER], dim=16)
    write_layer(tmp_path / "AGENTS.local.db", [ANSWER], dim=8, first_id=500)
    return LayerSet.from_directory(tmp_path)


def test_lexical_search_over_mixed_schemas_is_an_error_by_default(tmp_path: Path) -> None:
    ls = mixed(tmp_path)
    with pytest.raises(SchemaMismatchError) as err:
        lexical(ls, "canary")
    message = str(err.value)
    assert "base" in message and "local" in message and "16" in message and "8" in message
    assert "mixed_schemas=True" in message
    found = lexical(ls, "canary", mixed_schemas=True)
    assert {(layer, cid) for layer, cid, _ in found} >= {("local", 500), ("base", 21)}
    with pytest.raises(ValidationError, match="lexical searches only"):
        search(ls, SearchRequest(text="canary", mixed_schemas=True), np.ones(16, np.float32))
    assert lexical(ls, "canary", layers=("base",))  # one layer always agrees with itself


def test_cli_refuses_mixed_schemas_unless_allowed(tmp_path: Path, sediment) -> None:  # type: ignore[no-untyped-def]
    mixed(tmp_path)
    refused = sediment("search", "--dir", str(tmp_path), "--mode", "lexical", "canary")
    assert refused.code == 1 and refused.err.startswith("Error: ")
    assert "base" in refused.err and "local" in refused.err
    assert "--allow-mixed-schemas" in refused.err
    allowed = sediment("search", "--dir", str(tmp_path), "--mode", "lexical",
                       "--allow-mixed-schemas", "--json", "canary")
    assert allowed.code == 0, allowed.err
    assert {(r["layer"], r["id"]) for r in allowed.json()["results"]} >= {("local", 500)}


# -- the persisted lexicon (issue 13, item 15) --------------------------------------------

@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexicon, "PERSIST_MIN_CHUNKS", 50)


def fresh(tmp_path: Path) -> LayerSet:
    """A new layer set: new LayerFile objects, so nothing cached in this process is reused."""
    gc.collect()
    return LayerSet.from_directory(tmp_path)


def lex_files(tmp_path: Path) -> list[Path]:
    return sorted(tmp_path.glob(".*.lex"))


def count_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    built: list[int] = []
    real = Postings.build.__func__  # type: ignore[attr-defined]

    def spy(cls: type[Postings], docs: object, analyzer_name: str = "english") -> Postings:
        built.append(1)
        return real(cls, docs, analyzer_name)  # type: ignore[no-any-return]

    monkeypatch.setattr(Postings, "build", classmethod(spy))
    return built


@pytest.mark.usefixtures("small_threshold")
def test_the_first_query_writes_the_lexicon_and_the_next_process_maps_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_layer(tmp_path / "AGENTS.db", [*texts(300), ANSWER])
    want = lexical(fresh(tmp_path), "kubernetes canary")
    [written] = lex_files(tmp_path)
    key = _whole_key(LayerFile.open(tmp_path / "AGENTS.db"))
    assert written.name == f".AGENTS.db.{key[:16]}.301.english.lex"
    built = count_builds(monkeypatch)
    assert lexical(fresh(tmp_path), "kubernetes canary") == want
    assert built == []
    assert lexical(fresh(tmp_path), "kubernetes", bm25=_plain()) and built == [1]
    assert len(lex_files(tmp_path)) == 2  # one file per analyzer


def _plain() -> object:
    from sediment.search import BM25Params

    return BM25Params(analyzer="plain")


def _corruptions(data: bytes) -> dict[str, bytes]:
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x40
    huge = bytearray(data)
    huge[44:52] = (2**62).to_bytes(8, "little")  # n_docs
    terms = bytearray(data)
    terms[52:60] = (2**40).to_bytes(8, "little")  # n_terms
    return {"truncated": data[: len(data) - 7], "empty": b"", "garbage": b"\x00" * len(data),
            "flipped byte": bytes(flipped), "huge count": bytes(huge),
            "huge terms": bytes(terms), "header only": data[:96],
            "other magic": b"NOTALEX!" + data[8:]}


@pytest.mark.usefixtures("small_threshold")
@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage", "flipped byte",
                                    "huge count", "huge terms", "header only", "other magic"])
def test_a_damaged_lexicon_is_ignored_and_rebuilt(tmp_path: Path, damage: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    write_layer(tmp_path / "AGENTS.db", [*texts(300), ANSWER])
    want = lexical(fresh(tmp_path), "kubernetes canary deploy")
    [path] = lex_files(tmp_path)
    good = path.read_bytes()
    path.write_bytes(_corruptions(good)[damage])
    assert lexical(fresh(tmp_path), "kubernetes canary deploy") == want
    assert "ignoring lexicon" in caplog.text
    assert path.read_bytes() == good  # rewritten whole


@pytest.mark.usefixtures("small_threshold")
def test_a_hostile_lexicon_with_a_valid_checksum_is_refused(tmp_path: Path) -> None:
    """A forger can recompute the CRC; out-of-range postings are still refused, since a
    posting past the chunk table would index outside the score array."""
    write_layer(tmp_path / "AGENTS.db", [*texts(300), ANSWER])
    f = LayerFile.open(tmp_path / "AGENTS.db")
    key = _whole_key(f)
    p = Postings.build(f.string(int(s)) for s in f.records["content"].tolist())
    bad_docs = p.docs.copy()
    bad_docs[-1] = 10**6
    forged = Postings(p.analyzer, p.doc_len, p.total_len, p.term_blob, p.term_offsets,
                      p.offsets, bad_docs, p.tf)
    falling = p.offsets.copy()
    falling[1] = falling[2] + 1
    backwards = Postings(p.analyzer, p.doc_len, p.total_len, p.term_blob, p.term_offsets,
                         falling, p.docs, p.tf)
    for bad in (forged, backwards):
        data = lexicon.encode(bad, key)
        with pytest.raises(lexicon.LexiconError):
            lexicon.decode(data, key, "english", f.chunk_count)
    with pytest.raises(lexicon.LexiconError, match="another version"):
        lexicon.decode(lexicon.encode(p, key), "0" * 32, "english", f.chunk_count)
    with pytest.raises(lexicon.LexiconError, match="chunks"):
        lexicon.decode(lexicon.encode(p, key), key, "english", f.chunk_count + 1)


@pytest.mark.usefixtures("small_threshold")
def test_a_stale_lexicon_is_never_used_and_is_replaced(tmp_path: Path) -> None:
    """A lexicon of another text (renamed to the current key, as a copy from another
    machine might be) fails the key check; after a change, the old file is removed."""
    write_layer(tmp_path / "AGENTS.db", texts(300, seed=1))
    lexical(fresh(tmp_path), "deploy")
    [old] = lex_files(tmp_path)
    write_layer(tmp_path / "AGENTS.db", [*texts(300, seed=2), ANSWER])
    key = _whole_key(LayerFile.open(tmp_path / "AGENTS.db"))
    current = lexicon.lexicon_path(tmp_path / "AGENTS.db", key, "english", 301)
    old.rename(current)
    assert ("base", 301) in {(la, i) for la, i, _ in lexical(fresh(tmp_path), "canary")}
    write_layer(tmp_path / "AGENTS.db", texts(300, seed=3))
    lexical(fresh(tmp_path), "deploy")
    assert len(lex_files(tmp_path)) == 1 and not current.exists()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                        max_size=40), max_size=15),
       st.sampled_from(["english", "plain"]))
def test_lexicon_codec_round_trips(docs: list[str], analyzer_name: str) -> None:
    p = Postings.build(docs, analyzer_name)
    key = "ab" * 16
    q = lexicon.decode(lexicon.encode(p, key), key, analyzer_name, len(docs))
    for name in ("doc_len", "term_offsets", "offsets", "docs", "tf"):
        assert np.array_equal(getattr(p, name), getattr(q, name)), name
    assert bytes(q.term_blob) == bytes(p.term_blob) and q.total_len == p.total_len
    terms = [t for d in docs for t in BM25Index([], analyzer_name=analyzer_name).analyze(d)]
    for t in terms[:5]:
        assert q.term_id(t) == p.term_id(t) >= 0
    assert q.term_id("\x00never") == -1


def test_small_layers_get_no_lexicon_file(tmp_path: Path) -> None:
    write_layer(tmp_path / "AGENTS.db", texts(30))
    assert lexical(fresh(tmp_path), "deploy") and lex_files(tmp_path) == []
    assert lexicon.ensure_lexicon(tmp_path / "AGENTS.db") is None


@pytest.mark.usefixtures("small_threshold")
def test_a_lexicon_that_cannot_be_written_or_read_still_searches(tmp_path: Path) -> None:
    """A directory squats on the lexicon's name (works as root too, unlike chmod): the
    read fails, the write fails, the search answers from memory."""
    layer = write_layer(tmp_path / "AGENTS.db", [*texts(300), ANSWER])
    key = _whole_key(LayerFile.open(layer))
    lexicon.lexicon_path(layer, key, "english", 301).mkdir()
    assert ("base", 301) in {(la, i) for la, i, _ in lexical(fresh(tmp_path), "canary")}
    assert not [p for p in lex_files(tmp_path) if p.is_file()]


def test_index_status_and_clean_know_lexicon_files(tmp_path: Path, sediment) -> None:  # type: ignore[no-untyped-def]
    """Real end to end: a 5,000-chunk layer gets its lexicon from the first search."""
    n = lexicon.PERSIST_MIN_CHUNKS
    write_layer(tmp_path / "AGENTS.db", texts(n))
    assert sediment("search", "--dir", str(tmp_path), "--mode", "lexical", "deploy").code == 0
    [current] = lex_files(tmp_path)
    status = sediment("index", "status", "--dir", str(tmp_path), "--json")
    assert status.code == 0, status.err
    [row] = status.json()
    assert row["lexicons"] == [str(current)] and row["stale"] == []
    stale = current.with_name(".AGENTS.db.0123456789abcdef.english.lex")  # older name
    stale.write_bytes(b"old")
    other = current.with_name(f".AGENTS.db.0123456789abcdef.{n}.english.lex")
    other.write_bytes(b"old")
    [row] = sediment("index", "status", "--dir", str(tmp_path), "--json").json()
    assert row["stale"] == [str(other), str(stale)]
    assert sediment("index", "clean", "--dir", str(tmp_path)).code == 0
    assert lex_files(tmp_path) == [current]
    assert sediment("index", "clean", "--all", "--dir", str(tmp_path)).code == 0
    assert lex_files(tmp_path) == []


@pytest.mark.usefixtures("small_threshold")
def test_compile_writes_the_lexicon(tmp_path: Path) -> None:
    from sediment.ingest.compile import CompileOptions, compile_layer

    src = tmp_path / "src"
    src.mkdir()
    for i in range(60):
        (src / f"n{i}.md").write_text(f"# Note {i}\n\n{texts(1, seed=i)[0]}\n", encoding="utf-8")
    out = tmp_path / "out" / "AGENTS.db"
    compile_layer(CompileOptions(root=src, include=["**/*.md"], out=out), EMB)
    key = _whole_key(LayerFile.open(out))
    assert lex_files(out.parent) == [lexicon.lexicon_path(out, key, "english", 60)]


# -- appends reuse the lexicon of the layer before them (issue 13, item 18) -----------------

def _append(tmp_path: Path, contents: list[str]) -> None:
    ls = LayerSet.from_directory(tmp_path)
    ls.append(LayerName.LOCAL, [NewChunk("note", t, "mcp", 0.9) for t in contents],
              EMB.embed(contents), profile=EMB.profile.to_dict())


@pytest.mark.usefixtures("small_threshold")
def test_an_append_reuses_the_lexicon_and_analyses_only_the_new_chunks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each new version of a layer used to be analysed whole and its lexicon rewritten: a
    recall after every save of an agent's store paid a full rebuild."""
    write_layer(tmp_path / "AGENTS.local.db", texts(300))
    lexical(fresh(tmp_path), "deploy")
    [prefix] = lex_files(tmp_path)
    written = prefix.read_bytes()
    _append(tmp_path, [ANSWER, "a canary deploy of the billing server"])
    analysed: list[int] = []
    real = Postings.build.__func__  # type: ignore[attr-defined]

    def spy(cls: type[Postings], docs: object, analyzer_name: str = "english") -> Postings:
        p = real(cls, docs, analyzer_name)
        analysed.append(p.n_docs)
        return p  # type: ignore[no-any-return]

    monkeypatch.setattr(Postings, "build", classmethod(spy))
    got = lexical(fresh(tmp_path), "kubernetes canary deploy")
    assert analysed == [2]
    assert lex_files(tmp_path) == [prefix] and prefix.read_bytes() == written
    monkeypatch.undo()
    for x in lex_files(tmp_path):
        x.unlink()
    monkeypatch.setattr(lexicon, "PERSIST_MIN_CHUNKS", 10**9)
    want = lexical(fresh(tmp_path), "kubernetes canary deploy")
    assert [(la, i) for la, i, _ in got] == [(la, i) for la, i, _ in want]
    assert [s for *_, s in got] == pytest.approx([s for *_, s in want], rel=1e-6)


@pytest.mark.usefixtures("small_threshold")
def test_a_long_tail_rebuilds_the_whole_lexicon_once(tmp_path: Path) -> None:
    write_layer(tmp_path / "AGENTS.local.db", texts(300))
    lexical(fresh(tmp_path), "deploy")
    [prefix] = lex_files(tmp_path)
    _append(tmp_path, texts(lexicon.tail_limit(300) + 1, seed=9))
    lexical(fresh(tmp_path), "deploy")
    [whole] = lex_files(tmp_path)
    f = LayerFile.open(tmp_path / "AGENTS.local.db")
    assert whole != prefix and whole.name.endswith(f".{f.chunk_count}.english.lex")
    assert whole == lexicon.lexicon_path(f.path or "", _whole_key(f), "english",
                                         f.chunk_count)


@pytest.mark.usefixtures("small_threshold")
def test_a_prefix_lexicon_of_other_text_is_not_used(tmp_path: Path) -> None:
    """Same chunk count, reworded first chunk: the prefix key differs, so the file of the
    other text is neither used for the prefix nor kept."""
    write_layer(tmp_path / "AGENTS.local.db", texts(300))
    lexical(fresh(tmp_path), "deploy")
    [old] = lex_files(tmp_path)
    write_layer(tmp_path / "AGENTS.local.db", [ANSWER, *texts(300)[1:]])
    _append(tmp_path, ["one more note"])
    f = LayerFile.open(tmp_path / "AGENTS.local.db")
    assert lexicon.find_lexicon(f, "english") is None
    assert ("local", 1) in {(la, i) for la, i, _ in lexical(fresh(tmp_path), "canary")}
    assert not old.exists()


# -- one per-file cache (issue 14, Events) --------------------------------------------------

def test_derived_data_dies_with_its_file(tmp_path: Path) -> None:
    """The search index used to hold its file strongly from inside a weak-keyed cache, so
    every layer version a process ever searched stayed mapped until exit."""
    write_layer(tmp_path / "AGENTS.db", texts(40))
    ls = LayerSet.from_directory(tmp_path)
    lexical(ls, "deploy")
    f = ls.layers()[0].file
    assert derived(f, "test.value", lambda g: [g.chunk_count]) == [41 - 1]
    assert derived(f, "test.value", lambda g: ["not rebuilt"]) == [40]
    assert layer_index(f) is layer_index(f)
    gone = weakref.ref(f)
    del f, ls
    gc.collect()
    assert gone() is None
