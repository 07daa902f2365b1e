"""What a compile does with the project's KCP manifests (see the package docstring).

``plan_kcp(root)`` discovers and validates every manifest and returns a ``KcpPlan``: the
unit files to chunk (``files``, posix paths relative to the compile root, added to whatever
the include globs selected) and, once the compile knows which chunk ids each file got,
``annotations(...)``: one ``kcp.intent`` and one ``meta.kcp_unit`` chunk per unit.

An invalid manifest is not ingested at all (its errors become compile warnings); its files
are still compiled as ordinary documents if the globs select them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sediment.format import Chunk, Source
from sediment.kcp.discover import find_manifests
from sediment.kcp.errors import ManifestError
from sediment.kcp.index import UNIT_KIND
from sediment.kcp.model import Manifest, Unit
from sediment.kcp.validate import validate_file
from sediment.kcp.yamlsafe import LIMITS, Limits
from sediment.store.events import event_content

__all__ = ["INTENT_KIND", "UNIT_KIND", "KcpPlan", "ManifestPlan", "PlannedUnit", "plan_kcp",
           "unit_event"]

INTENT_KIND = "kcp.intent"


@dataclass(frozen=True, slots=True)
class PlannedUnit:
    """A unit and its content file relative to the compile root (``file`` is None when the
    file is missing or leaves the root; the unit still gets its intent chunk)."""

    unit: Unit
    path: str
    file: str | None


@dataclass(slots=True)
class ManifestPlan:
    path: str
    manifest: Manifest
    units: list[PlannedUnit] = field(default_factory=list)


@dataclass(slots=True)
class KcpPlan:
    root: Path
    manifests: list[ManifestPlan] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def files(self) -> list[str]:
        """Unit files to chunk, sorted, each once."""
        return sorted({u.file for m in self.manifests for u in m.units if u.file})

    @property
    def manifest_paths(self) -> list[str]:
        return [m.path for m in self.manifests]

    def annotations(self, chunk_ids: Mapping[str, Sequence[int]],
                    next_id: int | Callable[[str, Sequence[Source]], int], *,
                    created_at_ms: Mapping[str, int] | None = None) -> list[Chunk]:
        """The ``kcp.intent`` and ``meta.kcp_unit`` chunks, ids from ``next_id``: consecutive
        from an int, or given by an allocator (compile keeps unchanged chunks' ids).

        ``chunk_ids`` maps each compiled file (posix, relative to the root) to the ids of its
        chunks; ``created_at_ms`` gives each manifest's source time (default 0), so the
        output is as reproducible as the rest of the compile. Order: manifests in discovery
        order, units in declaration order, each unit's intent chunk then its event.
        """
        times = created_at_ms or {}
        out: list[Chunk] = []
        allocate = _consecutive(next_id) if isinstance(next_id, int) else next_id
        for plan in self.manifests:
            when = int(times.get(plan.path, 0))
            successors = plan.manifest.supersedes()
            for planned in plan.units:
                unit = planned.unit
                doc_ids = list(chunk_ids.get(planned.file, ())) if planned.file else []
                intent_sources: tuple[Source, ...] = (f"{planned.path}:1",)
                intent_id = allocate(unit.intent, intent_sources)
                out.append(Chunk(intent_id, INTENT_KIND, unit.intent, "human", 1.0, when,
                                 intent_sources))
                content = unit_event(plan, planned, intent_id, successors.get(unit.id, []))
                event_sources: tuple[Source, ...] = (intent_id, *doc_ids)
                out.append(Chunk(allocate(content, event_sources), UNIT_KIND, content, "human",
                                 1.0, when, event_sources))
        return out


def _consecutive(first: int) -> Callable[[str, Sequence[Source]], int]:
    ids = iter(range(first, 2**32))
    return lambda _content, _sources: next(ids)


def unit_event(plan: ManifestPlan, planned: PlannedUnit, intent_chunk: int,
               supersedes: Sequence[str]) -> str:
    """The JSON content of a unit's ``meta.kcp_unit`` chunk (keys sorted, compact)."""
    unit, manifest = planned.unit, plan.manifest
    return event_content(
        event="kcp_unit", manifest=plan.path, project=manifest.project,
        kcp_version=manifest.kcp_version, unit=unit.id, path=planned.path, intent=unit.intent,
        scope=unit.scope, audience=list(unit.audience), triggers=list(unit.triggers),
        validated=unit.validated, supersedes=list(supersedes),
        depends_on=list(unit.depends_on), kind=unit.kind, deprecated=unit.deprecated,
        intent_chunk=intent_chunk)


def plan_kcp(root: Path, *, limits: Limits = LIMITS) -> KcpPlan:
    """Discover and validate the manifests under ``root``; plan what to ingest."""
    discovery = find_manifests(root)
    plan = KcpPlan(root, warnings=list(discovery.warnings))
    base = root.resolve()
    for found in discovery.manifests:
        try:
            result = validate_file(base / found.path, limits=limits)
        except ManifestError as exc:
            plan.warnings.append(f"{found.path}: not ingested: {exc.detail}")
            continue
        for issue in result.warnings:
            plan.warnings.append(f"{found.path}: warning {issue}")
        if not result.valid or result.manifest is None:
            shown = "; ".join(str(i) for i in result.errors[:3])
            more = f" (+{len(result.errors) - 3} more)" if len(result.errors) > 3 else ""
            plan.warnings.append(f"{found.path}: invalid, not ingested: {shown}{more}")
            continue
        mplan = ManifestPlan(found.path, result.manifest)
        for unit in result.manifest.units:
            path = f"{found.directory}/{unit.path}" if found.directory else unit.path
            mplan.units.append(PlannedUnit(unit, path, _readable(base, path)))
        plan.manifests.append(mplan)
    return plan


def _readable(base: Path, rel: str) -> str | None:
    """The real path of ``rel`` relative to ``base`` when it is a regular file inside it.

    Symlinks are resolved because the compile reads each real file once, under its own
    name, and does not follow symlinked directories.
    """
    target = base / rel
    if not target.is_file():
        return None
    real = target.resolve()
    return real.relative_to(base).as_posix() if real.is_relative_to(base) else None
