"""What a validated manifest is: units, relationships, federation entries, and the report.

Values are normalised once, in the validator, so every consumer (ingest, query, MCP) reads
the same thing: unit paths are posix and relative to the manifest's directory, triggers are
truncated to 60 characters and capped at 20, ``depends_on`` holds only known ids with the
edges that closed a cycle removed (KCP 4.7), and defaults are filled in (KCP 8: ``scope``
global, ``audience`` empty; ``kind`` knowledge; ``access`` public).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ExternalDependency",
    "Issue",
    "Manifest",
    "ManifestRef",
    "Relationship",
    "Severity",
    "Unit",
    "ValidationResult",
]

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Issue:
    """One finding: ``rule`` is a stable identifier, ``unit`` and ``field`` say where."""

    severity: Severity
    rule: str
    message: str
    unit: str | None = None
    field: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "rule": self.rule, "unit": self.unit,
                "field": self.field, "message": self.message}

    def __str__(self) -> str:
        where = " ".join(x for x in (f"unit {self.unit!r}" if self.unit else "",
                                     self.field or "") if x)
        return f"[{self.rule}] {where + ': ' if where else ''}{self.message}"


@dataclass(frozen=True, slots=True)
class ExternalDependency:
    """A unit's ``external_depends_on`` entry (KCP 3.6); ``on_failure`` is skip, warn or
    degrade (unknown values read as skip)."""

    manifest: str
    unit: str
    on_failure: str = "skip"


@dataclass(frozen=True, slots=True)
class Unit:
    id: str
    path: str
    intent: str
    scope: str
    audience: tuple[str, ...]
    index: int
    kind: str = "knowledge"
    validated: str | None = None
    depends_on: tuple[str, ...] = ()
    declared_depends_on: tuple[str, ...] = ()
    supersedes: str | None = None
    triggers: tuple[str, ...] = ()
    deprecated: bool = False
    access: str = "public"
    sensitivity: str | None = None
    token_estimate: int | None = None
    summary_unit: str | None = None
    requires_capabilities: tuple[str, ...] = ()
    external_depends_on: tuple[ExternalDependency, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "path": self.path, "intent": self.intent, "scope": self.scope,
            "audience": list(self.audience), "kind": self.kind, "validated": self.validated,
            "depends_on": list(self.depends_on), "supersedes": self.supersedes,
            "triggers": list(self.triggers), "deprecated": self.deprecated,
            "access": self.access, "sensitivity": self.sensitivity,
            "token_estimate": self.token_estimate, "summary_unit": self.summary_unit,
        }


@dataclass(frozen=True, slots=True)
class Relationship:
    """A declared relationship; ``active`` ones are the only ones used at run time."""

    from_id: str
    to_id: str
    type: str
    known_type: bool = True
    resolves: bool = True

    @property
    def active(self) -> bool:
        return self.known_type and self.resolves


@dataclass(frozen=True, slots=True)
class ManifestRef:
    """A ``manifests`` entry (KCP 3.6): a federated manifest this one declares."""

    id: str
    url: str
    relationship: str | None = None
    label: str | None = None
    local_mirror: str | None = None
    version_pin: str | None = None
    version_policy: str = "compatible"


@dataclass(slots=True)
class Manifest:
    project: str
    kcp_version: str | None
    version: str | None
    updated: str | None
    units: list[Unit]
    relationships: list[Relationship] = field(default_factory=list)
    manifests: list[ManifestRef] = field(default_factory=list)
    ignored_edges: list[tuple[str, str]] = field(default_factory=list)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def unit(self, unit_id: str) -> Unit | None:
        return next((u for u in self.units if u.id == unit_id), None)

    def supersedes(self) -> dict[str, list[str]]:
        """Unit id -> ids it supersedes: its ``supersedes`` field, then active
        ``supersedes`` relationships (KCP 5 calls them equivalent)."""
        out: dict[str, list[str]] = {}
        for u in self.units:
            if u.supersedes and u.supersedes != u.id:
                out.setdefault(u.id, []).append(u.supersedes)
        for r in self.relationships:
            if r.active and r.type == "supersedes" and r.from_id != r.to_id:
                targets = out.setdefault(r.from_id, [])
                if r.to_id not in targets:
                    targets.append(r.to_id)
        return out


@dataclass(slots=True)
class ValidationResult:
    """The outcome for one manifest. ``parse_error`` means it never reached validation."""

    source: str
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)
    unit_count: int = 0
    relationship_count: int = 0
    manifest: Manifest | None = None
    parse_error: bool = False

    @property
    def valid(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        m = self.manifest
        return {
            "source": self.source, "valid": self.valid, "parse_error": self.parse_error,
            "project": m.project if m else None, "kcp_version": m.kcp_version if m else None,
            "unit_count": self.unit_count, "relationship_count": self.relationship_count,
            "errors": [i.to_dict() for i in self.errors],
            "warnings": [i.to_dict() for i in self.warnings],
            "ignored_cycle_edges": [list(e) for e in m.ignored_edges] if m else [],
        }
