"""Fields added to KCP after v0.1 (up to v0.14) that carry rules, and the unit values
Sediment reads from them (kind, deprecated, access, sensitivity, hints, capabilities).

Governance blocks are in ``governance``, federation in ``federation_rules``. Here, all
warnings: unknown ``kind`` / ``format`` / ``update_frequency`` / ``access`` / ``sensitivity``
values (4.3a, 4.4a, 4.6b, 4.11, 4.12); ``auth_scope`` without ``access: restricted`` and
restricted units without a root ``auth`` block (4.11, 3.3); ``hints`` naming unknown units
(4.10); ``deprecated: true`` with no unit superseding it (4.13); ``freshness_policy``,
``visibility`` and ``authority`` values outside their vocabularies (3.7, 4.16, 4.17); the
``discovery`` advisory confidence bands (4.18). One error: ``verification_status: rumored``
without ``confidence < 0.5``, which KCP 4.18 states as a MUST.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sediment.kcp import federation_rules, governance
from sediment.kcp.model import Manifest, ManifestRef, Unit
from sediment.kcp.report import Report, as_mapping, as_str_list, known, scalar_str

__all__ = ["check"]

KINDS = frozenset({"knowledge", "schema", "service", "policy", "executable"})
FORMATS = frozenset({"markdown", "pdf", "openapi", "json-schema", "jupyter", "html",
                     "asciidoc", "rst", "vtt", "yaml", "json", "csv", "text"})
ACCESS = frozenset({"public", "authenticated", "restricted"})
ON_STALE = frozenset({"warn", "degrade", "block"})
PERMISSIONS = frozenset({"initiative", "requires_approval", "denied"})
STATUSES = frozenset({"rumored", "declared", "observed", "verified", "deprecated"})
SOURCES = frozenset({"manual", "web_traversal", "openapi", "llm_inference",
                     "manifest-self-description"})


def check(root: Mapping[str, Any], entries: Sequence[tuple[Mapping[str, Any], Unit | None]],
          manifest: Manifest, report: Report, source: str) -> list[ManifestRef]:
    """Check every later block; updates ``manifest.units``; returns the federation entries."""
    refs = federation_rules.check_manifests(root.get("manifests"), report, source)
    raw_refs = root.get("manifests")
    declared = {scalar_str(m.get("id")) or "" for m in raw_refs if isinstance(m, Mapping)} \
        if isinstance(raw_refs, list) else set()
    ids = {u.id for u in manifest.units}
    governance.check_compliance(root.get("compliance"), report)
    governance.check_trust(root.get("trust"), report)
    root_depth = governance.check_delegation(root.get("delegation"), report)
    has_auth = governance.check_auth(root.get("auth"), report)
    _check_policy_blocks(root, report, None)
    root_discovery = as_mapping(root.get("discovery"), report, "discovery.type", "discovery")
    federation_rules.check_external_relationships(root.get("external_relationships"),
                                                  declared, ids, report)
    superseded = {old for olds in manifest.supersedes().values() for old in olds}
    by_id = {u.id: u for u in manifest.units}
    updated: dict[str, Unit] = {}
    gated = False
    for entry, parsed in entries:
        unit = by_id.get(parsed.id) if parsed is not None else None
        who = unit.id if unit is not None else None
        governance.check_compliance(entry.get("compliance"), report, who)
        governance.check_delegation(entry.get("delegation"), report, who or "?", root_depth)
        _check_policy_blocks(entry, report, who)
        _check_discovery(root_discovery, entry.get("discovery"), ids, report, who)
        external = federation_rules.check_external_depends_on(
            entry.get("external_depends_on"), declared, who or "?", report)
        access = _vocabulary(entry, "access", ACCESS, report, who) or "public"
        gated = gated or access in ("authenticated", "restricted")
        if "auth_scope" in entry and access != "restricted":
            report.warn("unit.auth_scope", "auth_scope has no effect unless access is "
                        "restricted (KCP 4.11)", who, "auth_scope")
        if unit is None:
            continue
        kind = _vocabulary(entry, "kind", KINDS, report, who) or "knowledge"
        _vocabulary(entry, "format", FORMATS, report, who)
        _vocabulary(entry, "update_frequency", federation_rules.FREQUENCIES, report, who)
        sensitivity = _vocabulary(entry, "sensitivity", frozenset(governance.SENSITIVITY),
                                  report, who)
        deprecated = entry.get("deprecated")
        if deprecated is not None and not isinstance(deprecated, bool):
            report.warn("unit.deprecated.type", "deprecated should be a boolean", who,
                        "deprecated")
        if deprecated is True and unit.id not in superseded:
            report.warn("unit.deprecated.no-successor", "deprecated, but no unit supersedes it "
                        "(KCP 4.13)", who, "deprecated")
        capabilities = as_str_list(entry.get("requires_capabilities"), report,
                                   "unit.requires_capabilities.type", "requires_capabilities",
                                   who)
        tokens, summary = _check_hints(entry.get("hints"), ids, report, unit.id)
        updated[unit.id] = replace(
            unit, kind=kind, deprecated=deprecated is True, access=access,
            sensitivity=sensitivity, token_estimate=tokens, summary_unit=summary,
            requires_capabilities=tuple(capabilities), external_depends_on=external)
    if gated and not has_auth:
        report.warn("auth.missing", "units with access 'authenticated' or 'restricted' exist "
                    "but no 'auth' block is declared (KCP 3.3)", field="auth")
    manifest.units = [updated.get(u.id, u) for u in manifest.units]
    return refs


def _vocabulary(entry: Mapping[str, Any], key: str, vocabulary: frozenset[str],
                report: Report, unit: str | None) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not known(value, vocabulary):
        report.warn(f"unit.{key}.unknown", f"unknown {key} value {value!r}; ignored", unit, key)
        return None
    return str(value)


def _check_hints(value: Any, ids: set[str], report: Report, unit: str
                 ) -> tuple[int | None, str | None]:
    hints = as_mapping(value, report, "unit.hints.type", "hints", unit)
    if hints is None:
        return None, None
    tokens = hints.get("token_estimate")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)
                               or tokens < 0):
        report.warn("unit.hints.token_estimate", "hints.token_estimate should be a "
                    "non-negative integer", unit, "hints.token_estimate")
        tokens = None
    summary = scalar_str(hints.get("summary_unit"))
    for key in ("summary_unit", "summary_of", "chunk_of"):
        target = scalar_str(hints.get(key))
        if target is not None and target not in ids:
            report.warn(f"unit.hints.{key}", f"{key} references non-existent unit {target!r} "
                        "(KCP 4.10)", unit, f"hints.{key}")
            if key == "summary_unit":
                summary = None
    if hints.get("summary_available") is True and "summary_unit" not in hints:
        report.warn("unit.hints.summary_unit", "summary_available is true but no summary_unit "
                    "is named (KCP 4.10)", unit, "hints.summary_unit")
    index, total = hints.get("chunk_index"), hints.get("total_chunks")
    if isinstance(index, int) and isinstance(total, int) and index > total:
        report.warn("unit.hints.chunk_index", "chunk_index exceeds total_chunks (KCP 4.10)",
                    unit, "hints.chunk_index")
    return tokens, summary


def _check_policy_blocks(block: Mapping[str, Any], report: Report, unit: str | None) -> None:
    """freshness_policy (3.7), visibility (4.16) and authority (4.17), at root or unit."""
    fresh = as_mapping(block.get("freshness_policy"), report, "freshness_policy.type",
                       "freshness_policy", unit)
    if fresh is not None:
        age = fresh.get("max_age_days")
        if age is not None and (isinstance(age, bool) or not isinstance(age, int) or age < 0):
            report.warn("freshness_policy.max_age_days", "max_age_days should be a "
                        "non-negative integer", unit, "freshness_policy.max_age_days")
        stale = fresh.get("on_stale")
        if stale is not None and not known(stale, ON_STALE):
            report.warn("freshness_policy.on_stale", f"on_stale {stale!r} is unknown (warn, "
                        "degrade, block)", unit, "freshness_policy.on_stale")
    visibility = as_mapping(block.get("visibility"), report, "visibility.type", "visibility",
                            unit)
    if visibility is not None:
        default = visibility.get("default")
        if default is not None and not known(default, governance.SENSITIVITY):
            report.warn("visibility.default", f"visibility.default {default!r} is not a "
                        "sensitivity level", unit, "visibility.default")
        conditions = visibility.get("conditions")
        for n, cond in enumerate(conditions if isinstance(conditions, list) else []):
            if not isinstance(cond, Mapping) or "when" not in cond or "then" not in cond:
                report.warn("visibility.condition", f"visibility.conditions[{n}] needs when "
                            "and then (KCP 4.16)", unit, "visibility.conditions")
    authority = as_mapping(block.get("authority"), report, "authority.type", "authority",
                           unit)
    for action, permission in (authority or {}).items():
        if not known(permission, PERMISSIONS):
            report.warn("authority.permission", f"authority.{action} {permission!r} is not "
                        "initiative, requires_approval or denied; treated as denied",
                        unit, f"authority.{action}")


def _check_discovery(root: Mapping[str, Any] | None, value: Any, ids: set[str],
                     report: Report, unit: str | None) -> None:
    """Unit discovery fields override root ones field by field (KCP 3.9, 4.18)."""
    own = as_mapping(value, report, "discovery.type", "discovery", unit)
    if root is None and own is None:
        return
    merged = {**(root or {}), **(own or {})}
    status = merged.get("verification_status", "verified")
    if not known(status, STATUSES):
        report.warn("discovery.status", f"verification_status {status!r} is unknown", unit,
                    "discovery.verification_status")
    source = merged.get("source")
    if source is not None and not known(source, SOURCES):
        report.warn("discovery.source", f"discovery.source {source!r} is unknown", unit,
                    "discovery.source")
    raw = merged.get("confidence", 1.0)
    confidence = raw if isinstance(raw, int | float) and not isinstance(raw, bool) else None
    if confidence is None or not 0.0 <= confidence <= 1.0:
        report.warn("discovery.confidence", f"confidence should be a number from 0.0 to 1.0, "
                    f"got {raw!r}", unit, "discovery.confidence")
    if status == "rumored" and (confidence is None or confidence >= 0.5):
        report.error("discovery.rumored-confidence", "a unit with verification_status "
                     f"'rumored' MUST declare confidence < 0.5, got {raw!r} (KCP 4.18)", unit,
                     "discovery.confidence")
    elif confidence is not None and status == "declared" and not 0.5 <= confidence < 0.8:
        report.warn("discovery.declared-confidence", "declared units SHOULD have confidence "
                    ">= 0.5 and < 0.8", unit, "discovery.confidence")
    elif confidence is not None and status == "verified" and confidence < 0.8:
        report.warn("discovery.verified-confidence", "verified units SHOULD have confidence "
                    ">= 0.8", unit, "discovery.confidence")
    if status in ("rumored", "declared", "observed") and merged.get("verified_at") is not None:
        report.warn("discovery.verified_at", f"verified_at MUST be null when "
                    f"verification_status is {status!r}", unit, "discovery.verified_at")
    contradicted = merged.get("contradicted_by")
    if contradicted is not None and not known(contradicted, ids):
        report.warn("discovery.contradicted_by", f"contradicted_by references unknown unit "
                    f"{contradicted!r}", unit, "discovery.contradicted_by")
