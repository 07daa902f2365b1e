"""LoCoMo as memories: each conversation's turns written into a fresh store, one per turn.

The data stays in ``../shared/datasets/locomo`` (CC BY-NC 4.0: measurement only, never
copied into the repository). A turn becomes the content an agent would save:
``"<speaker>: <text>"``, plus ``[shares <caption>]`` when the turn shared an image, and with
``--memory-text dated`` the session date in front. Writes go through
``sediment.ops.write.write_context`` (scope local, kind ``conversation-turn``, the turn's
``dia_id`` as its ``path:line`` source), one commit per turn, as an agent's would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sediment.embed import Embedder
from sediment.format import Chunk, encode_layer
from sediment.ops import WriteRequest, write_context
from sediment.store import LayerSet, LayerStore

REPO = Path(__file__).resolve().parents[2]
DATASET = REPO.parent / "shared" / "datasets" / "locomo" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
              5: "adversarial"}
KIND = "conversation-turn"
MemoryText = Literal["speaker", "dated", "plain"]
_DIA = re.compile(r"D\d+:\d+")


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    date: str


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    category: str
    evidence: frozenset[str]


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]


def memory_text(turn: Turn, style: MemoryText) -> str:
    """The content written for one turn (see the module docstring)."""
    body = turn.text.strip()
    if turn.caption:
        body = f"{body} [shares {turn.caption.strip()}]"
    if style == "plain":
        return body
    text = f"{turn.speaker}: {body}"
    return f"[{turn.date}] {text}" if style == "dated" else text


def _turns(conv: dict[str, Any]) -> Iterator[Turn]:
    n = 1
    while f"session_{n}" in conv:
        date = str(conv.get(f"session_{n}_date_time", ""))
        for t in conv[f"session_{n}"]:
            yield Turn(t["dia_id"], t["speaker"], t.get("text", ""), t.get("blip_caption"), date)
        n += 1


def load(path: Path = DATASET, limit: int | None = None) -> list[Conversation]:
    """Conversations with the questions whose evidence names at least one existing turn.

    Evidence strings are parsed for ``D<session>:<turn>`` ids (a few entries hold two ids
    separated by ``;``); ids that name no turn are dropped.
    """
    if not path.is_file():
        raise SystemExit(f"{path} is missing: the quality benchmark reads ../shared beside "
                         "the repository")
    out = []
    for raw in json.loads(path.read_text())[:limit]:
        turns = list(_turns(raw["conversation"]))
        known = {t.dia_id for t in turns}
        questions = []
        for qa in raw["qa"]:
            ev = frozenset(d for e in qa.get("evidence", []) for d in _DIA.findall(str(e))
                           if d in known)
            if ev:
                questions.append(Question(str(qa["question"]),
                                          CATEGORIES.get(int(qa["category"]), "other"), ev))
        out.append(Conversation(str(raw["sample_id"]), turns, questions))
    return out


def write_memories(conv: Conversation, directory: Path, embedder: Embedder,
                   style: MemoryText, base_fraction: float = 0.0) -> dict[int, str]:
    """Write every turn into ``directory``'s local layer; return chunk id -> dia_id.

    With ``base_fraction`` above 0, that fraction of the turns (the earliest) is written
    first as a base layer, in one file as ``compile`` would, and only the later turns go
    to the local layer one at a time: a store whose layers differ in size, where BM25
    statistics computed per layer and over the layers searched together differ."""
    layerset = LayerSet.from_directory(directory)
    contents = [memory_text(t, style) for t in conv.turns]
    vectors = embedder.embed(contents)  # one batch: later per-turn embeds are cache hits
    ids: dict[int, str] = {}
    split = int(len(contents) * base_fraction)
    if split:
        chunks = [Chunk(n + 1, KIND, contents[n], "human", 1.0, 0,
                        (f"{conv.sample_id}/{conv.turns[n].dia_id}",)) for n in range(split)]
        (directory / "AGENTS.db").write_bytes(encode_layer(
            chunks, vectors[:split], metadata={"v": 1, "id_high_water": split,
                                               "embedding_profile": embedder.profile.to_dict()}))
        ids.update((n + 1, conv.turns[n].dia_id) for n in range(split))
    for turn, content in zip(conv.turns[split:], contents[split:], strict=True):
        request = WriteRequest(content=content, kind=KIND, confidence=1.0,
                               sources=[f"{conv.sample_id}/{turn.dia_id}"], scope="local")
        ids[write_context(layerset, embedder, request, actor="tester")] = turn.dia_id
    return ids


def write_memories_to(store: LayerStore, conv: Conversation, embedder: Embedder,
                      style: MemoryText) -> dict[int, str]:
    """``write_memories`` into any backend (all turns to local, one write each)."""
    contents = [memory_text(t, style) for t in conv.turns]
    embedder.embed(contents)
    ids: dict[int, str] = {}
    for turn, content in zip(conv.turns, contents, strict=True):
        request = WriteRequest(content=content, kind=KIND, confidence=1.0,
                               sources=[f"{conv.sample_id}/{turn.dia_id}"], scope="local")
        ids[write_context(store, embedder, request, actor="tester")] = turn.dia_id
    return ids
