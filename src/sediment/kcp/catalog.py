"""The valid manifests of a project tree, each with a stable URI name, for query and MCP.

A manifest's URI name is its ``project`` as a slug (lowercase; runs of characters outside
``a-z 0-9 . -`` become ``-``); when two manifests give the same slug, later ones (in
discovery order) get ``-2``, ``-3``, ... Invalid manifests are kept apart with their
results, so callers can say why they are not served.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from sediment.kcp.discover import FoundManifest, find_manifests
from sediment.kcp.errors import ManifestError
from sediment.kcp.model import Manifest, ValidationResult
from sediment.kcp.validate import validate_file
from sediment.kcp.yamlsafe import LIMITS, Limits

__all__ = ["Catalog", "CatalogEntry", "load_catalog", "project_slug"]

_NOT_SLUG = re.compile(r"[^a-z0-9.\-]+")


def project_slug(project: str) -> str:
    slug = _NOT_SLUG.sub("-", project.lower()).strip("-.")
    return slug or "project"


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    found: FoundManifest
    manifest: Manifest
    slug: str

    @property
    def path(self) -> str:
        return self.found.path

    def unit_file(self, unit_path: str) -> str:
        """A unit path relative to the catalog root."""
        d = self.found.directory
        return f"{d}/{unit_path}" if d else unit_path


@dataclass(slots=True)
class Catalog:
    root: Path
    entries: list[CatalogEntry] = field(default_factory=list)
    invalid: list[ValidationResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def by_slug(self, slug: str) -> CatalogEntry | None:
        return next((e for e in self.entries if e.slug == slug), None)


def load_catalog(root: Path, *, limits: Limits = LIMITS) -> Catalog:
    discovery = find_manifests(root)
    catalog = Catalog(root, warnings=list(discovery.warnings))
    taken: set[str] = set()
    for found in discovery.manifests:
        try:
            result = validate_file(root / found.path, limits=limits)
        except ManifestError as exc:
            catalog.warnings.append(f"{found.path}: {exc.detail}")
            continue
        if not result.valid or result.manifest is None:
            catalog.invalid.append(result)
            continue
        base = project_slug(result.manifest.project)
        slug, n = base, 1
        while slug in taken:
            n += 1
            slug = f"{base}-{n}"
        taken.add(slug)
        catalog.entries.append(CatalogEntry(found, result.manifest, slug))
    return catalog
