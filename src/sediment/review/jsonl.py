"""Export a layer to JSON Lines and import it back, losslessly.

Line 1 is a header describing the layer; every later line is one chunk with every RFC 7.1
field and its vector::

    {"format":"sediment.layer","version":1,"chunks":2,"dim":384,"element_type":"f32",
     "quant_scale":1.0,"embedding_profile":{...},"cache_key_alg":"...","embedder_metadata":{...}}
    {"id":7,"kind":"invariant","content":"...","author":"mcp","confidence":0.8,
     "created_at_ms":1767225600000,"sources":["src/router.ts:88",3],"embedding":[0.01,...]}

Floats are written as the shortest text that reads back as the same float32 (``0.8``, not
``0.800000011920929``); i8 layers export their dequantised values, which quantise back to
the same bytes. Export, import into an empty layer and export again gives the same text.
``id_high_water`` and ``tool_name`` describe a file, not its content, so they are not
exported. Import checks every line before it writes anything and names the first bad
line; the chunks keep their ids, authors and times, and go in as one commit.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sediment.errors import SchemaMismatchError, ValidationError
from sediment.format import AUTHORS, Chunk, LayerFile, Source
from sediment.format.model import check_chunk
from sediment.format.profile import PROFILE_KEYS
from sediment.store import HUMAN_WRITABLE, LayerName, LayerSet, NewChunk

FORMAT = "sediment.layer"
VERSION = 1
CHUNK_KEYS = ("id", "kind", "content", "author", "confidence", "created_at_ms", "sources",
              "embedding")
_U32_MAX = 2**32 - 1


def _f32(x: float) -> float:
    """The shortest decimal that reads back as the same float32."""
    return float(str(np.float32(x)))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def header_of(f: LayerFile) -> dict[str, Any]:
    md = f.metadata or {}
    head: dict[str, Any] = {"format": FORMAT, "version": VERSION, "chunks": f.chunk_count,
                            "dim": f.dim, "element_type": f.element_type,
                            "quant_scale": _f32(f.quant_scale)}
    for key in PROFILE_KEYS:
        head[key] = md.get(key)
    return head


def export_lines(path: str | Path) -> Iterator[str]:
    """The export of the layer file ``path``, one line at a time (each without newline)."""
    f = LayerFile.open(path)
    yield _dumps(header_of(f))
    for i in range(f.chunk_count):
        c = f.chunk_at(i)
        fields = {"id": c.id, "kind": c.kind, "content": c.content, "author": c.author,
                  "confidence": _f32(c.confidence), "created_at_ms": c.created_at_ms,
                  "sources": list(c.sources)}
        vector = ",".join(str(x) for x in f.vector(i))
        yield _dumps(fields)[:-1] + ',"embedding":[' + vector + "]}"


@dataclass(frozen=True, slots=True)
class Parsed:
    """A validated export: its header, its chunks and one vector per chunk."""

    header: dict[str, Any]
    chunks: tuple[Chunk, ...]
    vectors: npt.NDArray[np.float32]


def _bad(name: str, line: int, what: str) -> ValidationError:
    return ValidationError(f"{name}:{line}: {what}; nothing was imported")


def _load(line: str, name: str, n: int, column: bool) -> Any:
    """``line`` (line ``n``) as JSON; what is wrong with it names the line."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        at = f" (column {exc.colno})" if column else ""
        raise _bad(name, n, f"not JSON: {exc.msg}{at}") from exc
    except (ValueError, RecursionError) as exc:  # JSON in form that json.loads gives up on
        why = ("arrays or objects nested too deeply" if isinstance(exc, RecursionError)
               else "a number with too many digits (more than 4,300)")
        raise _bad(name, n, f"unreadable JSON: {why}") from None


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)


def _check_header(head: Any, name: str) -> dict[str, Any]:
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise _bad(name, 1, f"the first line must be the header object with "
                            f'"format": "{FORMAT}" (written by `sediment export`)')
    if head.get("version") != VERSION:
        raise _bad(name, 1, f"version {head.get('version')!r} is not supported (expected "
                            f"{VERSION})")
    dim, count = head.get("dim"), head.get("chunks")
    if not isinstance(dim, int) or isinstance(dim, bool) or not 0 <= dim <= 65_536:
        raise _bad(name, 1, f"dim {dim!r} must be an integer from 0 to 65536")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise _bad(name, 1, f"chunks {count!r} must be a non-negative integer")
    if head.get("element_type") not in ("f32", "i8"):
        raise _bad(name, 1, f"element_type {head.get('element_type')!r} must be f32 or i8")
    profile = head.get("embedding_profile")
    if profile is not None and not isinstance(profile, dict):
        raise _bad(name, 1, "embedding_profile must be an object or null")
    if profile is not None and profile.get("dim") not in (None, dim):
        raise _bad(name, 1, f"embedding_profile.dim {profile.get('dim')!r} differs from dim "
                            f"{dim}")
    return head


def _check_sources(value: Any) -> tuple[Source, ...] | str:
    if not isinstance(value, list):
        return "sources must be a list"
    for s in value:
        if _int(s):
            if not 0 < s <= _U32_MAX:
                return f"source chunk id {s} is outside 1..{_U32_MAX}"
        elif not isinstance(s, str) or not s:
            return f"source {s!r} must be a chunk id or a non-empty string"
    return tuple(value)


def _check_chunk(obj: Any, dim: int) -> tuple[Chunk, list[float]] | str:
    """The chunk and its vector, or what is wrong with the line."""
    if not isinstance(obj, dict):
        return "a chunk line must be a JSON object"
    missing = [k for k in CHUNK_KEYS if k not in obj]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    extra = sorted(set(obj) - set(CHUNK_KEYS))
    if extra:
        return f"unknown field(s) {', '.join(extra)}"
    cid, kind, content = obj["id"], obj["kind"], obj["content"]
    if not _int(cid) or not 0 < cid <= _U32_MAX:
        return f"id {cid!r} must be an integer from 1 to {_U32_MAX}"
    if not isinstance(kind, str) or not kind:
        return "kind must be a non-empty string"
    if not isinstance(content, str) or not content:
        return "content must be a non-empty string"
    if obj["author"] not in AUTHORS:
        return f"author {obj['author']!r} must be 'human' or 'mcp'"
    conf = obj["confidence"]
    if not _number(conf) or not 0.0 <= conf <= 1.0:
        return f"confidence {conf!r} must be a number from 0.0 to 1.0"
    created = obj["created_at_ms"]
    if not _int(created) or not 0 <= created < 2**64:
        return f"created_at_ms {created!r} must be a non-negative integer"
    sources = _check_sources(obj["sources"])
    if isinstance(sources, str):
        return sources
    emb = obj["embedding"]
    if not isinstance(emb, list) or len(emb) != dim:
        got = len(emb) if isinstance(emb, list) else type(emb).__name__
        return f"embedding must be a list of {dim} numbers (the header's dim), got {got}"
    if not all(_number(x) for x in emb):
        return "embedding must hold only finite numbers"
    chunk = Chunk(cid, kind, content, obj["author"], float(np.float32(conf)), created,
                  sources)
    try:
        check_chunk(chunk)  # the format's rules, text that UTF-8 cannot hold among them
    except ValidationError as exc:
        return str(exc).removeprefix(f"chunk {cid}: ")
    return chunk, emb


def parse(text: str, name: str = "<jsonl>") -> Parsed:
    """Validate every line of an export; the first problem raises, naming its line."""
    lines = text.split("\n")  # not splitlines(): U+2028 and friends may sit inside strings
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or not lines[0].strip():
        raise _bad(name, 1, "the file is empty; expected a header line")
    head = _check_header(_load(lines[0], name, 1, column=False), name)
    chunks: list[Chunk] = []
    vectors: list[list[float]] = []
    seen: dict[int, int] = {}
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            raise _bad(name, n, "empty line")
        got = _check_chunk(_load(line, name, n, column=True), head["dim"])
        if isinstance(got, str):
            raise _bad(name, n, got)
        chunk, vec = got
        if chunk.id in seen:
            raise _bad(name, n, f"chunk id {chunk.id} already appears on line {seen[chunk.id]}")
        seen[chunk.id] = n
        chunks.append(chunk)
        vectors.append(vec)
    if len(chunks) != head["chunks"]:
        raise _bad(name, len(lines) + 1, f"the header announces {head['chunks']} chunks but "
                                         f"the file has {len(chunks)} (truncated?)")
    matrix = np.asarray(vectors, dtype=np.float32).reshape(len(chunks), head["dim"])
    return Parsed(head, tuple(chunks), matrix)


@dataclass(frozen=True, slots=True)
class ImportReport:
    layer: str
    path: str
    chunks: int
    ids: tuple[int, ...]
    overrides: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "path": self.path, "chunks": self.chunks,
                "ids": list(self.ids), "overrides": list(self.overrides)}


def import_file(layerset: LayerSet, target: LayerName, source: Path, *,
                fresh_ids: bool = False) -> ImportReport:
    """Import an export into layer ``target`` (user, delta or local; never base).

    Ids are kept: an id already in the target layer is an error (layers are append-only);
    an id present in another layer makes the imported chunk a version of it, reported in
    ``overrides``. With ``fresh_ids`` every chunk gets a new id instead (as a write would),
    and sources naming chunks of the same export follow them: the way to bring in a layer
    whose ids another implementation chose (``sediment.store.foreign``).
    """
    if target not in HUMAN_WRITABLE:
        raise ValidationError(f"cannot import into the {target.value} layer: AGENTS.db is "
                              "immutable (RFC 6.1); import into user, delta or local")
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ValidationError(f"{source}: no such file") from exc
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{source}: not UTF-8 text (byte {exc.start})") from exc
    parsed = parse(text, str(source))
    head = parsed.header
    schema = layerset.schema()
    if schema is not None and parsed.chunks and \
            (schema.dim, schema.element_type) != (head["dim"], head["element_type"]):
        raise SchemaMismatchError(
            f"{source} holds {head['dim']}-dim {head['element_type']} vectors but the layers "
            f"hold {schema.dim}-dim {schema.element_type} (layer {schema.source}); nothing "
            "was imported")
    # fresh ids are chosen and used under one lock; kept ids are checked, then appended
    with layerset.transaction() if fresh_ids else contextlib.nullcontext():
        if fresh_ids:
            items, others = _fresh_items(layerset, parsed), []
        else:
            existing = layerset.layer(target)
            if existing is not None:
                clash = [c.id for c in parsed.chunks if c.id in existing.file.id_index]
                if clash:
                    shown = ", ".join(map(str, clash[:20])) + (" ..." if len(clash) > 20 else "")
                    raise ValidationError(f"{len(clash)} id(s) already exist in the "
                                          f"{target.value} layer ({existing.path}): {shown}; "
                                          "nothing was imported")
            others = [c.id for c in parsed.chunks if layerset.get(c.id) is not None]
            items = [NewChunk(c.kind, c.content, c.author, c.confidence, c.sources,
                              c.created_at_ms, id=c.id) for c in parsed.chunks]
        ids = layerset.append(target, items, parsed.vectors,
                              profile=head.get("embedding_profile"),
                              embedder_metadata=head.get("embedder_metadata"),
                              allowed=HUMAN_WRITABLE, element_type=head["element_type"])
    return ImportReport(target.value, str(layerset.paths[target]), len(ids), tuple(ids),
                        tuple(others))


def _fresh_items(layerset: LayerSet, parsed: Parsed) -> list[NewChunk]:
    """The chunks under new ids, their sources naming chunks of the same export following."""
    fresh = layerset.ids.next_ids(layerset.written_high_water(), len(parsed.chunks))
    new_id = {c.id: fresh[i] for i, c in enumerate(parsed.chunks)}
    return [NewChunk(c.kind, c.content, c.author, c.confidence,
                     tuple(new_id.get(s, s) if isinstance(s, int) else s for s in c.sources),
                     c.created_at_ms, id=new_id[c.id]) for c in parsed.chunks]
