"""Reading the store as documents: a chunk's whole source document, the sources it holds,
and the source filter of a search. The services behind ``agents_get``, ``agents_sources``
and a persona's ``context.get`` / ``context.sources`` / ``filters.source``.

A *document* is what compile made chunks from: the chunks whose first ``path:line`` source
names the same file, in line order, each as precedence resolves its id. Visibility is
search's: events (``meta.*``) and memories (``memory.*``, private to their actor) are never
returned, nor chunks that events supersede or forget.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from sediment.errors import NotFoundError
from sediment.format.model import Chunk, Source
from sediment.store import PRECEDENCE, LayerName, LayerStore
from sediment.store.backend import LayerSummary
from sediment.store.rules import PRIVATE_LAYERS, Reader, is_hidden_kind

__all__ = [
    "MAX_DOCUMENTS",
    "MAX_DOCUMENT_CHARS",
    "get_document",
    "list_sources",
    "readable_layer",
    "source_matcher",
]

MAX_DOCUMENT_CHARS = 200_000
"""A document's body is cut here (``truncated``): one read must fit a model's context."""
MAX_DOCUMENTS = 5_000
"""``list_sources`` lists at most this many documents (``truncated`` says when more)."""
_PATH_LINE = re.compile(r"^(.+):(\d+)$")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


def visible_kind(kind: str) -> bool:
    """Kinds a read may return: not an event, not an actor's memory."""
    return not is_hidden_kind(kind)


def path_of(sources: Sequence[Source]) -> tuple[str, int] | None:
    """The file and line of a chunk's first ``path:line`` source, if it has one."""
    for s in sources:
        if isinstance(s, str):
            m = _PATH_LINE.match(s)
            if m:
                return m.group(1), int(m.group(2))
    return None


class _Paths:
    """One layer's visible chunks by document path: ``ids`` for counting, ``chunks`` for
    reading. Over layer files it holds positions in the chunk table and decodes only the
    chunks of the paths asked for."""

    def __init__(self, positions: dict[str, list[int]], ids: Callable[[list[int]], list[int]],
                 decode: Callable[[list[int]], list[Chunk]]) -> None:
        self._positions = positions
        self._ids = ids
        self._decode = decode

    def chunks(self, path: str) -> list[Chunk]:
        pos = self._positions.get(path)
        return self._decode(pos) if pos else []

    def ids(self) -> dict[str, list[int]]:
        return {p: self._ids(pos) for p, pos in self._positions.items()}


def _positions(chunks: Iterable[Chunk]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        where = path_of(c.sources) if visible_kind(c.kind) else None
        if where is not None:
            out.setdefault(where[0], []).append(i)
    return out


_CACHE: dict[tuple[str, tuple[int, int, int]], dict[str, list[int]]] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 8


def _layer_paths(store: LayerStore, name: LayerName) -> _Paths:
    """One layer's :class:`_Paths`. A layer file is indexed once per version of the file
    (the index is derived, like the lexical one); other stores are read each time."""
    files = store.layer_files()
    if files is None:
        chunks = [c for c, _ in store.chunks(name)]
        return _Paths(_positions(chunks), lambda pos: [chunks[i].id for i in pos],
                      lambda pos: [chunks[i] for i in pos])
    layer = files.layer(name)
    if layer is None:
        return _Paths({}, lambda pos: [], lambda pos: [])
    key = (str(layer.path), layer.stamp)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
    if cached is None:
        cached = _positions(layer.file.chunks())
        with _CACHE_LOCK:
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = cached
    f = layer.file
    return _Paths(cached, lambda pos: [int(i) for i in f.ids[pos]], f.chunks_at)




def _resolve(store: LayerStore, chunk_id: int, hidden: AbstractSet[int]
             ) -> tuple[LayerName, Chunk] | None:
    versions = store.versions(chunk_id)
    if not versions or chunk_id in hidden:
        return None
    layer, top = versions[0]
    return (layer, top) if visible_kind(top.kind) else None


def _title(path: str | None, body: str) -> str | None:
    for line in body.splitlines():
        m = _HEADING.match(line.strip())
        if m:
            return m.group(1)
    return path.rsplit("/", 1)[-1] if path else None


def get_document(store: LayerStore, chunk_id: int, actor: str | None = None
                 ) -> dict[str, Any]:
    """The chunk ``chunk_id`` as precedence resolves it, with the whole document it came
    from: ``title``, ``body`` (the document's chunks joined in line order; the chunk's
    own content when it names no file), ``path`` and ``chunks`` (id, layer, kind, line).
    ``actor`` reads as search does: another actor's local notes read as absent."""
    hidden = store.hidden_ids(actor)
    found = _resolve(store, chunk_id, hidden)
    if found is None:
        raise NotFoundError(f"no readable chunk {chunk_id}: no layer holds it, or search "
                            "hides it (an event, an actor's memory, or a superseded or "
                            "forgotten chunk)")
    layer, chunk = found
    where = path_of(chunk.sources)
    members: list[tuple[int, int, LayerName, Chunk]] = []
    if where is not None:
        seen: set[int] = set()
        for name in store.present(PRECEDENCE):
            for c in _layer_paths(store, name).chunks(where[0]):
                if c.id in seen:
                    continue
                seen.add(c.id)
                top = _resolve(store, c.id, hidden)
                if top is None:
                    continue
                top_where = path_of(top[1].sources)
                if top_where is not None and top_where[0] == where[0]:
                    members.append((top_where[1], c.id, top[0], top[1]))
    if not any(m[1] == chunk_id for m in members):
        members.append((where[1] if where else 0, chunk_id, layer, chunk))
    members.sort(key=lambda m: (m[0], m[1]))
    body, truncated, total = [], False, 0
    for _, _, _, c in members:
        if total + len(c.content) > MAX_DOCUMENT_CHARS:
            truncated = True
            break
        body.append(c.content)
        total += len(c.content) + 2
    text = "\n\n".join(body)
    path = where[0] if where else None
    return {
        "layer": layer.value, **chunk.to_dict(),
        "title": _title(path, text), "body": text, "path": path, "truncated": truncated,
        "chunks": [{"id": cid, "layer": n.value, "kind": c.kind, "line": line}
                   for line, cid, n, c in members],
    }


def readable_layer(store: LayerStore, name: LayerName, actor: str | None, *,
                   max_ids: int = 1000) -> tuple[LayerSummary, dict[str, int]] | None:
    """A layer's summary and its chunk counts by kind as ``actor`` reads them (None when
    the layer is absent): in a private layer only the chunks :class:`Reader` lets them
    read count or are listed, so another actor's notes, memories and their events show
    no id, count or kind. None (the machine's owner) reads the layer as stored."""
    summary = store.summary(name, max_ids=max_ids)
    if summary is None or actor is None or name not in PRIVATE_LAYERS:
        return (summary, store.kind_counts(name)) if summary is not None else None
    reader = Reader(store, actor)
    ids: list[int] = []
    kinds: dict[str, int] = {}
    for chunk, _ in store.chunks(name):
        if reader.may_read(name, chunk):
            ids.append(chunk.id)
            kinds[chunk.kind] = kinds.get(chunk.kind, 0) + 1
    return replace(summary, chunks=len(ids), first_ids=tuple(ids[:max_ids])), kinds


def _source_records(store: LayerStore) -> list[dict[str, Any]]:
    """The ``sources`` a compiled base records in its metadata (docs/sources.md)."""
    files = store.layer_files()
    base = files.layer(LayerName.BASE) if files is not None else None
    meta = base.file.metadata if base is not None else None
    records = (meta or {}).get("sources")
    if not isinstance(records, list):
        return []
    return [r for r in records if isinstance(r, dict) and isinstance(r.get("name"), str)
            and isinstance(r.get("prefix", ""), str)]


def _under(path: str, prefix: str) -> bool:
    prefix = prefix.strip("/")
    return not prefix or path == prefix or path.startswith(prefix + "/")


def _source_name(path: str, records: Sequence[dict[str, Any]]) -> str | None:
    best: tuple[int, str] | None = None
    for r in records:
        prefix = str(r.get("prefix", "")).strip("/")
        if _under(path, prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), r["name"])
    return best[1] if best else None


def source_matcher(store: LayerStore, value: str) -> Callable[[Sequence[Source]], bool]:
    """A test for a search's ``filters.source``: ``value`` is the name of a configured
    source (``[[sources]]``, recorded by compile), else a path prefix ending at a ``/``
    (``runbooks`` selects ``runbooks/payments.md``, not ``runbooks-old/x.md``)."""
    records = _source_records(store)
    named = [r for r in records if r["name"] == value]
    if named:
        def by_name(sources: Sequence[Source]) -> bool:
            where = path_of(sources)
            return where is not None and _source_name(where[0], records) == value
        return by_name

    def by_prefix(sources: Sequence[Source]) -> bool:
        where = path_of(sources)
        return where is not None and _under(where[0], value)
    return by_prefix


def list_sources(store: LayerStore, actor: str | None = None) -> dict[str, Any]:
    """Each layer present (``path``, readable ``chunks``, the ``sources`` compile recorded)
    with the documents it holds (``path``, ``source`` name, readable ``chunks``), by path;
    at most :data:`MAX_DOCUMENTS` documents in all (``truncated`` says when more)."""
    records = _source_records(store)
    hidden = store.hidden_ids(actor)
    layers: list[dict[str, Any]] = []
    budget = MAX_DOCUMENTS
    truncated = False
    for name in store.present(PRECEDENCE):
        got = readable_layer(store, name, actor, max_ids=0)
        counts = got[1] if got is not None else {}
        documents = []
        for path, found in sorted(_layer_paths(store, name).ids().items()):
            n = len(set(found) - hidden)
            if not n:
                continue
            if budget == 0:
                truncated = True
                break
            budget -= 1
            documents.append({"path": path, "source": _source_name(path, records),
                              "chunks": n})
        layers.append({
            "name": name.value, "path": store.location(name),
            "chunks": sum(n for k, n in counts.items() if visible_kind(k)),
            "sources": records if name is LayerName.BASE else [],
            "documents": documents})
    return {"layers": layers, "truncated": truncated}
