"""Rules of the federation declarations (KCP 3.6): ``manifests``, ``external_depends_on``,
``external_relationships``. Checked without fetching anything (a manifest with a
``manifests`` block MUST stay valid in isolation); fetching lives in ``remote``.

Errors: a ``manifests`` entry without ``id`` or ``url``, an ``id`` outside
``[a-z0-9.-]+``, a duplicate ``id``, a ``url`` that is absolute but not HTTPS, a ``url``
that cannot be parsed or whose host DNS cannot name (``urls.host_problem``), a
``local_mirror`` that is absolute or escapes the manifest's directory.

Warnings: an unknown ``relationship``, ``update_frequency`` or ``version_policy`` (read as
``compatible``); a ``version_pin`` (not verified without fetching, KCP 3.6); a relative
``url`` (resolved against the declaring manifest's own HTTPS URL, never fetched for a local
manifest); an ``external_depends_on`` naming an undeclared manifest or an unknown
``on_failure`` (read as ``skip``); an ``external_relationships`` entry missing its fields or
naming undeclared manifests or unknown local units.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sediment.kcp.errors import ManifestError
from sediment.kcp.model import ExternalDependency, ManifestRef
from sediment.kcp.paths import normalize_path
from sediment.kcp.report import SEMVER, Report, scalar_str
from sediment.kcp.report import known as is_known
from sediment.kcp.urls import host_problem, split_url

__all__ = ["check_external_depends_on", "check_external_relationships", "check_manifests"]

MANIFEST_ID = re.compile(r"[a-z0-9.\-]+")
RELATIONSHIPS = frozenset({"child", "foundation", "governs", "peer", "archive"})
FREQUENCIES = frozenset({"hourly", "daily", "weekly", "monthly", "rarely", "never"})
POLICIES = frozenset({"exact", "minimum", "compatible"})
ON_FAILURE = frozenset({"skip", "warn", "degrade"})
REL_TYPES = frozenset({"enables", "context", "supersedes", "contradicts", "depends_on",
                       "governs"})


def check_manifests(value: Any, report: Report, source: str) -> list[ManifestRef]:
    if value is None:
        return []
    if not isinstance(value, list):
        report.warn("manifests.type", "manifests must be a list; ignored", field="manifests")
        return []
    out: list[ManifestRef] = []
    seen: set[str] = set()
    for n, entry in enumerate(value):
        where = f"manifests[{n}]"
        if not isinstance(entry, Mapping):
            report.error("manifests.entry", f"{where} must be a mapping", field=where)
            continue
        mid = scalar_str(entry.get("id"))
        if not mid:
            report.error("manifests.id.required", f"{where}.id is REQUIRED (KCP 3.6)",
                         field=f"{where}.id")
        elif not MANIFEST_ID.fullmatch(mid):
            report.error("manifests.id.pattern", f"manifest id {mid!r} must match "
                         r"^[a-z0-9.\-]+$ (KCP 3.6)", field=f"{where}.id")
        elif mid in seen:
            report.error("manifests.id.duplicate", f"duplicate manifest id {mid!r} (KCP 3.6)",
                         field=f"{where}.id")
        url = _url(entry.get("url"), where, report)
        _vocabulary(entry, "relationship", RELATIONSHIPS, where, report)
        _vocabulary(entry, "update_frequency", FREQUENCIES, where, report)
        policy = scalar_str(entry.get("version_policy")) or "compatible"
        if policy not in POLICIES:
            report.warn("manifests.version_policy", f"{where}.version_policy {policy!r} is "
                        "unknown; read as compatible (KCP 3.6)", field=f"{where}.version_policy")
            policy = "compatible"
        pin = scalar_str(entry.get("version_pin"))
        if pin is not None:
            how = "" if "version_policy" in entry else "; version_policy is absent, so " \
                "compatible applies"
            report.warn("manifests.version_pin", f"{where}.version_pin {pin!r} is not verified "
                        f"without fetching the manifest{how} (KCP 3.6)",
                        field=f"{where}.version_pin")
            if not SEMVER.fullmatch(pin):
                report.warn("manifests.version_pin.format", f"{where}.version_pin should be "
                            "a semver version", field=f"{where}.version_pin")
        mirror = _mirror(entry.get("local_mirror"), where, report, source)
        if mid and url and mid not in seen and MANIFEST_ID.fullmatch(mid):
            label = entry.get("label")
            out.append(ManifestRef(mid, url, scalar_str(entry.get("relationship")),
                                   label if isinstance(label, str) else None, mirror, pin,
                                   policy))
        if mid:
            seen.add(mid)
    return out


def _url(value: Any, where: str, report: Report) -> str | None:
    if not isinstance(value, str) or not value.strip():
        report.error("manifests.url.required", f"{where}.url is REQUIRED (KCP 3.6)",
                     field=f"{where}.url")
        return None
    try:
        parts = split_url(value)
    except ValueError as exc:
        report.error("manifests.url.invalid", f"manifest url {value[:200]!r} is not a valid "
                     f"URL: {exc}", field=f"{where}.url")
        return None
    if not parts.scheme and not parts.netloc:
        report.warn("manifests.url.relative", f"{where}.url {value!r} is a relative reference: "
                    "it is resolved against the declaring manifest's HTTPS URL and never "
                    "fetched for a local manifest (KCP 3.6)", field=f"{where}.url")
        return value
    if parts.scheme.lower() != "https" or not parts.hostname:
        report.error("manifests.url.https", f"manifest url must use HTTPS, got {value!r} "
                     "(KCP 3.6, 12.3)", field=f"{where}.url")
        return None
    problem = host_problem(parts.hostname)
    if problem is not None:
        report.error("manifests.url.invalid", f"manifest url {value[:200]!r} does not name a "
                     f"valid host: {problem}", field=f"{where}.url")
        return None
    return value


def _vocabulary(entry: Mapping[str, Any], key: str, vocabulary: frozenset[str], where: str,
                report: Report) -> None:
    value = entry.get(key)
    if value is not None and not is_known(value, vocabulary):
        report.warn(f"manifests.{key}", f"{where}.{key} {value!r} is unknown; ignored",
                    field=f"{where}.{key}")


def _mirror(value: Any, where: str, report: Report, source: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        report.warn("manifests.local_mirror", f"{where}.local_mirror must be a path; ignored",
                    field=f"{where}.local_mirror")
        return None
    try:
        return normalize_path(value, what=f"{where}.local_mirror", source=source)
    except ManifestError as exc:
        report.error("manifests.local_mirror", exc.detail, field=f"{where}.local_mirror")
        return None


def check_external_depends_on(value: Any, declared: set[str], unit: str, report: Report
                              ) -> tuple[ExternalDependency, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        report.warn("external_depends_on.type", "external_depends_on must be a list; ignored",
                    unit, "external_depends_on")
        return ()
    out: list[ExternalDependency] = []
    for n, entry in enumerate(value):
        where = f"external_depends_on[{n}]"
        if not isinstance(entry, Mapping):
            report.warn("external_depends_on.type", f"{where} must be a mapping; ignored",
                        unit, where)
            continue
        manifest, target = scalar_str(entry.get("manifest")), scalar_str(entry.get("unit"))
        if not manifest or not target:
            report.error("external_depends_on.required", f"{where} needs manifest and unit "
                         "(KCP 3.6)", unit, where)
            continue
        if manifest not in declared:
            report.warn("external_depends_on.manifest", f"{where} references unknown manifest "
                        f"id {manifest!r} (KCP 3.6)", unit, f"{where}.manifest")
        on_failure = scalar_str(entry.get("on_failure")) or "skip"
        if on_failure not in ON_FAILURE:
            report.warn("external_depends_on.on_failure", f"{where}.on_failure "
                        f"{on_failure!r} is unknown; read as skip (KCP 3.6)", unit,
                        f"{where}.on_failure")
            on_failure = "skip"
        out.append(ExternalDependency(manifest, target, on_failure))
    return tuple(out)


def check_external_relationships(value: Any, declared: set[str], units: set[str],
                                 report: Report) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        report.warn("external_relationships.type", "external_relationships must be a list",
                    field="external_relationships")
        return
    for n, entry in enumerate(value):
        where = f"external_relationships[{n}]"
        if not isinstance(entry, Mapping):
            report.warn("external_relationships.type", f"{where} must be a mapping",
                        field=where)
            continue
        if not all(scalar_str(entry.get(k)) for k in ("from_unit", "to_unit", "type")):
            report.warn("external_relationships.fields", f"{where} needs from_unit, to_unit "
                        "and type; ignored", field=where)
            continue
        if not is_known(entry.get("type"), REL_TYPES):
            report.warn("external_relationships.type.unknown", f"{where}: type "
                        f"{entry.get('type')!r} is unknown; ignored", field=where)
        sides = [(scalar_str(entry.get(f"{s}_manifest")), scalar_str(entry.get(f"{s}_unit")))
                 for s in ("from", "to")]
        if all(m is None for m, _ in sides):
            report.warn("external_relationships.local", f"{where} names no manifest; it "
                        "belongs in relationships (KCP 3.6)", field=where)
        for manifest, unit_id in sides:
            if manifest is not None and manifest not in declared:
                report.warn("external_relationships.manifest", f"{where} references unknown "
                            f"manifest id {manifest!r}", field=where)
            if manifest is None and unit_id not in units:
                report.warn("external_relationships.unit", f"{where} references unknown unit "
                            f"{unit_id!r}", field=where)
