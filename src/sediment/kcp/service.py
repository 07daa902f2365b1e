"""What the MCP server exposes for KCP: unit resources and ``search_knowledge``.

Resources come from the manifests on disk (the source of truth): each valid manifest is
``knowledge://<project>`` (its YAML) and each of its units ``knowledge://<project>/<unit-id>``
(the unit's file). Unit ids cannot contain ``/``, so the two never collide; ``<project>`` is
the slug described in ``catalog``.

``search_knowledge`` searches the layer set (what the compile stored) lexically, re-ranked
by ``KcpReranker``, and returns one result per unit. A service with an embedder runs the
same search hybrid: it builds the request with ``knowledge_request``, runs it with its own
profile checks and embedder, and groups the hits with ``units_of``.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sediment.errors import NotFoundError, ValidationError
from sediment.kcp.catalog import Catalog, CatalogEntry, load_catalog, project_slug
from sediment.kcp.index import KcpIndex, UnitRecord
from sediment.kcp.paths import inside
from sediment.kcp.query import audience_matches
from sediment.kcp.rerank import KcpReranker
from sediment.kcp.validate import SCOPES
from sediment.search import MAX_K, SearchRequest, SearchResult, search
from sediment.search.engine import Mode
from sediment.store import LayerSet

__all__ = ["MAX_READ_BYTES", "KnowledgeService", "Resource", "ResourceContent"]

MAX_READ_BYTES = 10 * 1024 * 1024
SCHEME = "knowledge"


@dataclass(frozen=True, slots=True)
class Resource:
    uri: str
    name: str
    description: str
    mime_type: str

    def to_dict(self) -> dict[str, str]:
        return {"uri": self.uri, "name": self.name, "description": self.description,
                "mimeType": self.mime_type}


@dataclass(frozen=True, slots=True)
class ResourceContent:
    uri: str
    mime_type: str
    text: str


class KnowledgeService:
    """One project's KCP knowledge. The catalog is read on first use; ``refresh()`` re-reads.

    ``layerset`` serves ``search_knowledge``.
    """

    def __init__(self, root: Path, layerset: LayerSet | None = None) -> None:
        self.root = root
        self.layerset = layerset
        self._catalog: Catalog | None = None

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = load_catalog(self.root)
        return self._catalog

    def refresh(self) -> None:
        self._catalog = None

    # -- resources -----------------------------------------------------------------------
    def list_resources(self) -> list[Resource]:
        out: list[Resource] = []
        for entry in self.catalog.entries:
            m = entry.manifest
            out.append(Resource(f"{SCHEME}://{entry.slug}", f"{m.project} knowledge manifest",
                                f"KCP manifest {entry.path}: {len(m.units)} units",
                                "application/yaml"))
            for unit in m.units:
                path = entry.unit_file(unit.path)
                out.append(Resource(f"{SCHEME}://{entry.slug}/{unit.id}", unit.id,
                                    unit.intent, _mime(path)))
        return out

    def read_resource(self, uri: str) -> ResourceContent:
        entry, unit_id = self._locate(uri)
        if unit_id is None:
            return ResourceContent(uri, "application/yaml", self._read(entry.path))
        unit = entry.manifest.unit(unit_id)
        if unit is None:
            raise NotFoundError(f"{uri}: project {entry.manifest.project!r} has no unit "
                                f"{unit_id!r}")
        path = entry.unit_file(unit.path)
        return ResourceContent(uri, _mime(path), self._read(path))

    def _locate(self, uri: str) -> tuple[CatalogEntry, str | None]:
        try:
            parts = urlsplit(uri)
        except ValueError:  # e.g. an unbalanced '[' reads as a broken IPv6 literal
            parts = None
        if parts is None or parts.scheme != SCHEME or not parts.netloc or parts.query \
                or parts.fragment:
            raise ValidationError(f"{uri!r} is not a knowledge://<project>[/<unit-id>] URI")
        entry = self.catalog.by_slug(parts.netloc)
        if entry is None:
            raise NotFoundError(f"{uri}: no valid manifest for project {parts.netloc!r}")
        unit_id = parts.path.strip("/") or None
        return entry, unit_id

    def _read(self, rel: str) -> str:
        target = inside(self.root, rel)
        if target is None or not target.is_file():
            raise NotFoundError(f"{rel}: no such file inside {self.root}")
        if target.stat().st_size > MAX_READ_BYTES:
            raise ValidationError(f"{rel}: larger than {MAX_READ_BYTES:,} bytes")
        try:
            return target.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationError(f"{rel}: not UTF-8 text") from None

    # -- search --------------------------------------------------------------------------
    def search_knowledge(self, query: str, audience: str | None = None,
                         scope: str | None = None, exclude_superseded: bool = True,
                         k: int = 10) -> list[dict[str, Any]]:
        """Units whose content or intent matches ``query``, best first, one per unit.

        Each result names the unit (``uri``, ``unit_id``, ``project``, ``path``,
        ``intent``...), its best matching chunk, the score with its boosts, and
        ``load_first``: the URIs of its prerequisites in dependency order.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("query must be a non-empty string")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 100:
            raise ValidationError(f"k must be an integer from 1 to 100, got {k!r}")
        if scope is not None and scope not in SCOPES:
            raise ValidationError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        request, index = self.knowledge_request(query, k, mode="lexical")
        assert self.layerset is not None
        return self.units_of(search(self.layerset, request), index, audience, scope,
                             exclude_superseded, k)

    def knowledge_request(self, query: str, k: int, *, mode: Mode
                          ) -> tuple[SearchRequest, KcpIndex]:
        """The chunk search behind ``search_knowledge`` (enough hits to fill ``k`` units),
        re-ranked by the units' triggers, and the index that maps hits to units."""
        if self.layerset is None:
            raise ValidationError("search_knowledge needs the project's layer files; none "
                                  "are configured")
        index = KcpIndex.from_layerset(self.layerset)
        request = SearchRequest(text=query, k=min(MAX_K, max(k * 10, 50)), mode=mode,
                                rerankers=(KcpReranker(index, query),))
        return request, index

    def units_of(self, result: SearchResult, index: KcpIndex, audience: str | None,
                 scope: str | None, exclude_superseded: bool, k: int
                 ) -> list[dict[str, Any]]:
        """One entry per unit, best hit first, for at most ``k`` units that pass the
        filters."""
        slugs = self._slugs()
        out: list[dict[str, Any]] = []
        seen: set[tuple[str, str]] = set()
        for hit in result.hits:
            for unit in index.units_of(hit.id):
                if unit.key in seen or not _wanted(unit, index, audience, scope,
                                                   exclude_superseded):
                    continue
                seen.add(unit.key)
                before = [u for u in index.load_order([unit.key]) if u.key != unit.key]
                out.append({
                    **_describe(unit, slugs), "score": hit.score, "boosts": dict(hit.boosts),
                    "chunk": {"id": hit.chunk.id, "kind": hit.chunk.kind, "layer":
                              hit.layer.value, "source": next(iter(hit.chunk.sources), None),
                              "content": hit.chunk.content},
                    "load_first": [_uri(u, slugs) for u in before],
                })
                if len(out) >= k:
                    return out
        return out

    def _slugs(self) -> dict[str, str]:
        """Manifest path -> URI name, for units recorded by a compile; falls back to a slug
        of the recorded project when the manifest is no longer on disk."""
        try:
            return {e.path: e.slug for e in self.catalog.entries}
        except NotFoundError:
            return {}


def _wanted(unit: UnitRecord, index: KcpIndex, audience: str | None, scope: str | None,
            exclude_superseded: bool) -> bool:
    if audience and not audience_matches(unit.audience, audience):
        return False
    if scope and unit.scope != scope:
        return False
    return not (exclude_superseded and index.is_superseded(unit.key))


def _uri(unit: UnitRecord, slugs: dict[str, str]) -> str:
    return f"{SCHEME}://{slugs.get(unit.manifest) or project_slug(unit.project)}/{unit.id}"


def _describe(unit: UnitRecord, slugs: dict[str, str]) -> dict[str, Any]:
    return {"uri": _uri(unit, slugs), "unit_id": unit.id, "project": unit.project,
            "manifest": unit.manifest, "path": unit.path, "intent": unit.intent,
            "scope": unit.scope, "audience": list(unit.audience),
            "triggers": list(unit.triggers), "validated": unit.validated,
            "deprecated": unit.deprecated}


def _mime(path: str) -> str:
    if path.lower().endswith((".md", ".markdown", ".mdx")):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(path)
    return guessed or "text/plain"

