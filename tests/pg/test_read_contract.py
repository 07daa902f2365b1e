"""``agents_get`` and ``agents_sources`` read alike from layer files and from PostgreSQL
(the contract suite's backends, tests/pg/test_contract.py)."""

from __future__ import annotations

import pytest

from sediment.errors import NotFoundError
from sediment.ops import SearchOptions, parse
from sediment.ops.forget import forget
from sediment.ops.read import get_document, list_sources
from sediment.store import HUMAN_WRITABLE, LayerStore
from tests.pg.layers import BASE_TEXTS
from tests.pg.test_contract import backend, service

__all__ = ["backend"]


def test_a_document_by_precedence(backend: LayerStore) -> None:
    doc = get_document(backend, 1)
    # user overrides 2 and delta 3 with versions that name no file: no longer in docs/a.md
    assert [c["id"] for c in doc["chunks"]] == [1, 4, 5, 6, 7, 8]
    assert (doc["title"], doc["path"]) == ("a.md", "docs/a.md")
    assert doc["body"] == "\n\n".join(BASE_TEXTS[i] for i in (0, 3, 4, 5, 6, 7))
    assert get_document(backend, 2)["layer"] == "user"


def test_forgotten_chunks_leave_documents_and_sources(backend: LayerStore) -> None:
    forget(backend, 5, "obsolete", allowed=HUMAN_WRITABLE)
    assert [c["id"] for c in get_document(backend, 1)["chunks"]] == [1, 4, 6, 7, 8]
    with pytest.raises(NotFoundError, match="no readable chunk 5"):
        get_document(backend, 5)
    layers = {la["name"]: la for la in list_sources(backend)["layers"]}
    assert layers["base"]["documents"] == [{"path": "docs/a.md", "source": None,
                                            "chunks": 7}]
    assert layers["user"]["documents"] == []


def test_the_source_filter(backend: LayerStore) -> None:
    params = parse(SearchOptions, {"query": "layer", "k": 10, "mode": "lexical",
                                   "filters": {"source": "docs"}})
    hits = service(backend).search(params, None)["results"]
    assert hits and all(str(h["sources"][0]).startswith("docs/a.md:") for h in hits)
