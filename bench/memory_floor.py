"""``python -m bench.memory_floor``: how recall's absolute score separates relevant from
irrelevant memories, and where its floor goes.

Every LoCoMo conversation becomes one actor's user memories (each turn a fact, written
in one commit with no dedup, so every evidence turn stays). Each question is asked of its
own conversation (**relevant**: the score of the best-placed evidence turn) and of the
next conversation, other people's lives (**irrelevant**: the top score there). Twenty
queries about nothing in any conversation (nonsense strings and off-topic engineering
questions, ``OFF_TOPIC``) are asked of every conversation too.

``LEXICAL_HALF`` (the BM25 at which the lexical part is half its weight) and the floor are
chosen on the even conversations (the fit half) and reported on the odd ones. The floor is
the highest (in steps of 0.01) that costs at most ``--budget`` of recall@5 on the fit half.
recall@5 is recall's own path: the store's 30 best candidates in the engine's fused order
(what recall orders by), less those under the floor. ``--order blend`` orders by the
absolute score instead, for comparison.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.memory_locomo import STYLE
from bench.quality import locomo
from bench.quality.__main__ import DEFAULT_CACHE, make_embedder
from sediment.memory import FileMemoryStore
from sediment.memory.model import CATEGORIES, Scope, memory_kind
from sediment.memory.relevance import DEFAULT_MIN_SCORE, LEXICAL_WEIGHT, relevance
from sediment.memory.store import Candidate, NewMemory, Place
from sediment.store import LayerSet

OFF_TOPIC = (
    "zzqx", "qwv plk", "xkcd 9341 zzyzx", "asdf jkl", "lorem ipsum dolor",
    "kubernetes ingress annotation for TLS passthrough",
    "what is the default PostgreSQL shared_buffers setting",
    "rust borrow checker lifetime error E0502", "how to configure the ruff linter",
    "webpack tree shaking side effects flag", "terraform state lock dynamodb table",
    "which gRPC status code means deadline exceeded", "numpy einsum broadcasting rules",
    "CI cache key for the uv lockfile", "the p99 latency budget of the billing API",
    "who owns the Kafka cluster", "merge queue settings for the monorepo",
    "SQL migration naming convention", "OAuth refresh token rotation policy",
    "the staging deploy day",
)
HALVES = ("fit", "report")
CANDIDATES = 30


@dataclass
class Case:
    """One question's candidates in its own store (with which are evidence) and in another."""

    own: list[Candidate]
    evidence: list[bool]
    other: list[Candidate]


@dataclass
class Half:
    cases: list[Case] = field(default_factory=list)
    off: list[list[Candidate]] = field(default_factory=list)


def _score(c: Candidate, half: float) -> float:
    return relevance(c.vector_score, c.lexical_score, half=half)


ORDER = {"order": "engine"}


def _recall5(cases: Sequence[Case], half: float | None, floor: float) -> float:
    """recall@5 of the candidates scoring ``floor`` or more by the blend (``half``; None:
    no floor), in the engine's fused order (or the blend's, with ``--order blend``)."""
    hit = 0
    for case in cases:
        kept = [(c, ev) for c, ev in zip(case.own, case.evidence, strict=True)
                if half is None or _score(c, half) >= floor]
        by_blend = ORDER["order"] == "blend" and half is not None
        kept.sort(key=lambda x: -(_score(x[0], half) if by_blend and half is not None
                                  else x[0].score))
        hit += any(ev for _, ev in kept[:5])
    return hit / max(len(cases), 1)


def _top(cands: Sequence[Candidate], half: float) -> float:
    return max((_score(c, half) for c in cands), default=0.0)


def _relevant(cases: Sequence[Case], half: float) -> list[float]:
    return [max((_score(c, half) for c, ev in zip(x.own, x.evidence, strict=True) if ev),
                default=0.0) for x in cases]


def _pct(xs: Sequence[float]) -> str:
    a = np.asarray(xs, dtype=np.float64)
    return " / ".join(f"{np.percentile(a, q):.3f}" for q in (5, 25, 50, 75, 95))


def _collect(conversations: int | None, embedder_name: str, cache: Path) -> dict[str, Half]:
    embedder = make_embedder(embedder_name, cache)
    convs = locomo.load(limit=conversations)
    halves = {h: Half() for h in HALVES}
    with tempfile.TemporaryDirectory(prefix="sediment-memory-floor-") as tmp:
        root = Path(tmp)
        (root / "project").mkdir()
        store = FileMemoryStore(LayerSet.from_directory(root / "project"), root / "data",
                                profile=embedder.profile.to_dict(), dim=embedder.profile.dim,
                                embedder_metadata=embedder.metadata())
        labels: dict[tuple[int, int], str] = {}
        for n, conv in enumerate(convs):
            texts = [locomo.memory_text(turn, STYLE) for turn in conv.turns]
            vectors = embedder.embed(texts)
            refs = store.append(Place.USER, f"c{n}", [
                NewMemory(memory_kind("fact", f"c{n}"), text, "mcp", 1.0, (),
                          np.asarray(vec, dtype=np.float32))
                for text, vec in zip(texts, vectors, strict=True)], [])
            labels.update({(n, r.id): t.dia_id
                           for r, t in zip(refs, conv.turns, strict=True)})

        def search(actor: str, text: str) -> list[Candidate]:
            vec = np.asarray(embedder.embed([text])[0], dtype=np.float32)
            return store.search(actor, Scope.USER, text, vec, CATEGORIES, CANDIDATES)

        for n, conv in enumerate(convs):
            half = halves[HALVES[n % 2]]
            other = f"c{(n + 1) % len(convs)}"
            for q in conv.questions:
                own = search(f"c{n}", q.text)
                half.cases.append(Case(own, [labels.get((n, c.ref.id)) in q.evidence
                                             for c in own],
                                       search(other, q.text)))
            half.off.extend(search(f"c{n}", text) for text in OFF_TOPIC)
            print(f"{conv.sample_id}: {len(conv.questions)} questions", flush=True)
    return halves


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.memory_floor", description=__doc__)
    p.add_argument("--conversations", type=int, default=None, help="only the first N")
    p.add_argument("--halves", default="2,4,8,16,32,64",
                   help="comma-separated LEXICAL_HALF values to compare on the fit half")
    p.add_argument("--budget", type=float, default=0.005,
                   help="the most recall@5 the floor may cost on the fit half")
    p.add_argument("--embedder", default="minilm", choices=("minilm", "hash"))
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--order", default="engine", choices=("engine", "blend"))
    p.add_argument("--json", type=Path, default=None)
    opts = p.parse_args(argv)
    ORDER["order"] = opts.order
    halves = _collect(opts.conversations, opts.embedder, opts.cache)
    fit, rep = halves["fit"], halves["report"]
    print(f"\nlexical weight {LEXICAL_WEIGHT}; fit half {len(fit.cases)} questions, report "
          f"half {len(rep.cases)}")
    print("\n| LEXICAL_HALF | floor within the budget | fit recall@5 there | irrelevant "
          "questions answered with nothing |\n|---|---|---|---|")
    base = _recall5(fit.cases, None, 0.0)
    best: tuple[float, float, float] | None = None
    for h in (float(x) for x in opts.halves.split(",")):
        floor = 0.0
        for step in range(1, 100):
            if _recall5(fit.cases, h, step / 100) < base - opts.budget:
                break
            floor = step / 100
        empty = float(np.mean([_top(c.other, h) < floor for c in fit.cases]))
        print(f"| {h:g} | {floor:.2f} | {_recall5(fit.cases, h, floor):.3f} | {empty:.1%} |")
        if best is None or empty > best[2] + 1e-9:
            best = (h, floor, empty)
    assert best is not None
    half, floor, _ = best
    print(f"\nchosen on the fit half: LEXICAL_HALF {half:g}, floor {floor:.2f} "
          f"(the library's default is {DEFAULT_MIN_SCORE})")
    out: dict[str, dict[str, float]] = {}
    print("\n| half | relevant (evidence) p5/p25/p50/p75/p95 | irrelevant (other "
          "conversation, top) | off-topic (top) |\n|---|---|---|---|")
    for name, hv in halves.items():
        print(f"| {name} | {_pct(_relevant(hv.cases, half))} | "
              f"{_pct([_top(c.other, half) for c in hv.cases])} | "
              f"{_pct([_top(c, half) for c in hv.off])} |")
    print("\n| half | floor | recall@5 | recall@5 no floor | irrelevant questions answered "
          "with nothing | off-topic answered with nothing |\n|---|---|---|---|---|---|")
    for name, hv in halves.items():
        for f in sorted({floor, DEFAULT_MIN_SCORE}):
            row = {"floor": f, "recall@5": _recall5(hv.cases, half, f),
                   "recall@5 no floor": _recall5(hv.cases, None, 0.0),
                   "irrelevant empty": float(np.mean([_top(c.other, half) < f
                                                      for c in hv.cases])),
                   "off-topic empty": float(np.mean([_top(c, half) < f for c in hv.off]))}
            out[f"{name} {f:.2f}"] = row
            print(f"| {name} | {f:.2f} | {row['recall@5']:.3f} | "
                  f"{row['recall@5 no floor']:.3f} | "
                  f"{row['irrelevant empty']:.1%} | {row['off-topic empty']:.1%} |")
    if opts.json:
        opts.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
