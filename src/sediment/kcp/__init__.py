"""Knowledge Context Protocol: validate, discover, ingest and serve ``knowledge.yaml`` manifests.

Sediment implements the rules of KCP v0.1 sections 2 to 8 and 12, and the validation rules
of the later fields (up to v0.14) that carry them; ``validate`` lists which findings are
errors and which are warnings. Modules: ``yamlsafe`` (bounded YAML 1.2 loading),
``validate`` / ``extensions`` / ``governance`` / ``federation_rules`` (the rules),
``discover``, ``ingest``, ``index`` / ``rerank`` (search), ``query`` (KCP 15 scoring),
``catalog`` / ``service`` (MCP), ``remote`` (federation, off by default), ``starter``.

How KCP is stored (one data model: everything is an RFC chunk in a layer)
-------------------------------------------------------------------------
A compile of a project ingests each valid manifest it discovers:

- Each unit's file is chunked like any other document (its kind from the usual rules,
  provenance ``path:line``); a file two units name is chunked once.
- Each unit gets one ``kcp.intent`` chunk: ``content`` is the intent sentence (so it is
  embedded and searchable), ``sources`` is ``["<unit file>:1"]``, author ``human``,
  confidence 1.0.
- Each unit gets one ``meta.kcp_unit`` event (a zero vector, like every ``meta.*`` event):
  ``sources`` is ``[<intent chunk id>, <ids of the file's chunks>...]`` and ``content`` is a
  compact JSON object with sorted keys::

      {"audience": [...], "depends_on": [...], "deprecated": false, "event": "kcp_unit",
       "intent": "...", "intent_chunk": 12, "kcp_version": "0.14", "kind": "knowledge",
       "manifest": "docs/knowledge.yaml", "path": "docs/guide.md", "project": "...",
       "scope": "global", "supersedes": [...], "triggers": [...], "unit": "guide",
       "validated": "2026-02-24"}

  ``manifest`` and ``path`` are relative to the compile root; ``depends_on`` holds only
  ids of the same manifest, with cycle-closing edges removed; ``supersedes`` lists the ids
  the unit replaces (its ``supersedes`` field, then ``supersedes`` relationships).
- All of these take the manifest's source time as ``created_at``, and ids follow the
  compile's own chunks (manifests in discovery order, units in declaration order, each
  unit's intent chunk then its event), so compiles stay reproducible.

Reading it back, ``KcpIndex`` folds the ``meta.kcp_unit`` events of a layer set (the
highest layer's, then the latest, per (manifest, unit id)), and ``KcpReranker`` uses it in
``SearchRequest.rerankers``: trigger matches rank a unit up, superseded units rank below
their successors; ``load_order`` puts ``depends_on`` prerequisites first.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sediment.kcp.catalog import Catalog, CatalogEntry, load_catalog, project_slug
    from sediment.kcp.discover import Discovery, FoundManifest, find_manifests, llms_txt_manifest
    from sediment.kcp.errors import ManifestError, RemoteRefused
    from sediment.kcp.index import KcpIndex, UnitKey, UnitRecord
    from sediment.kcp.ingest import (
        INTENT_KIND,
        UNIT_KIND,
        KcpPlan,
        ManifestPlan,
        PlannedUnit,
        plan_kcp,
    )
    from sediment.kcp.model import (
        ExternalDependency,
        Issue,
        Manifest,
        ManifestRef,
        Relationship,
        Unit,
        ValidationResult,
    )
    from sediment.kcp.query import QueryMatch, query_units, score_unit
    from sediment.kcp.remote import (
        FederationResult,
        RemoteManifest,
        RemotePolicy,
        fetch_manifest,
        public_only,
        resolve_federation,
    )
    from sediment.kcp.rerank import KcpReranker, load_order, trigger_hits
    from sediment.kcp.service import KnowledgeService, Resource, ResourceContent
    from sediment.kcp.starter import Starter, build_starter, write_starter
    from sediment.kcp.validate import (
        KNOWN_VERSIONS,
        TARGET_VERSION,
        parse_manifest,
        validate_file,
        validate_manifest,
    )
    from sediment.kcp.yamlsafe import LIMITS, Limits, load_yaml

_HOMES = {"Catalog": "catalog", "CatalogEntry": "catalog", "load_catalog": "catalog",
          "project_slug": "catalog", "Discovery": "discover", "FoundManifest": "discover",
          "find_manifests": "discover", "llms_txt_manifest": "discover",
          "ManifestError": "errors", "RemoteRefused": "errors", "KcpIndex": "index",
          "UnitKey": "index", "UnitRecord": "index", "INTENT_KIND": "ingest",
          "UNIT_KIND": "ingest", "KcpPlan": "ingest", "ManifestPlan": "ingest",
          "PlannedUnit": "ingest", "plan_kcp": "ingest", "ExternalDependency": "model",
          "Issue": "model", "Manifest": "model", "ManifestRef": "model", "Relationship": "model",
          "Unit": "model", "ValidationResult": "model", "QueryMatch": "query",
          "query_units": "query", "score_unit": "query", "FederationResult": "remote",
          "RemoteManifest": "remote", "RemotePolicy": "remote", "fetch_manifest": "remote",
          "public_only": "remote", "resolve_federation": "remote", "KcpReranker": "rerank",
          "load_order": "rerank", "trigger_hits": "rerank",
          "KnowledgeService": "service", "Resource": "service", "ResourceContent": "service",
          "Starter": "starter", "build_starter": "starter", "write_starter": "starter",
          "KNOWN_VERSIONS": "validate", "TARGET_VERSION": "validate",
          "parse_manifest": "validate", "validate_file": "validate",
          "validate_manifest": "validate", "LIMITS": "yamlsafe", "Limits": "yamlsafe",
          "load_yaml": "yamlsafe"}
"""Where each name lives: a name is imported on first use, so reading compiled units
(``index``, ``rerank``: every text search) does not load manifest validation, YAML and
federation."""


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'sediment.kcp' has no attribute {name!r}")
    return getattr(importlib.import_module(f"sediment.kcp.{_HOMES[name]}"), name)


__all__ = [
    "INTENT_KIND",
    "KNOWN_VERSIONS",
    "LIMITS",
    "TARGET_VERSION",
    "UNIT_KIND",
    "Catalog",
    "CatalogEntry",
    "Discovery",
    "ExternalDependency",
    "FederationResult",
    "FoundManifest",
    "Issue",
    "KcpIndex",
    "KcpPlan",
    "KcpReranker",
    "KnowledgeService",
    "Limits",
    "Manifest",
    "ManifestError",
    "ManifestPlan",
    "ManifestRef",
    "PlannedUnit",
    "QueryMatch",
    "Relationship",
    "RemoteManifest",
    "RemotePolicy",
    "RemoteRefused",
    "Resource",
    "ResourceContent",
    "Starter",
    "Unit",
    "UnitKey",
    "UnitRecord",
    "ValidationResult",
    "build_starter",
    "fetch_manifest",
    "find_manifests",
    "llms_txt_manifest",
    "load_catalog",
    "load_order",
    "load_yaml",
    "parse_manifest",
    "plan_kcp",
    "project_slug",
    "public_only",
    "query_units",
    "resolve_federation",
    "score_unit",
    "trigger_hits",
    "validate_file",
    "validate_manifest",
    "write_starter",
]
