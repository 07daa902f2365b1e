"""Parse and validate a knowledge.yaml: the rules of KCP v0.1 sections 2 to 8 and 12.

Errors (the manifest is invalid): ``project`` absent or empty; ``units`` absent, not a list
or empty; a unit without ``id``, ``path``, ``intent``, ``scope`` or ``audience`` (the parsed
unit still gets KCP 8's defaults: scope ``global``, audience empty); an ``id`` outside
``[a-z0-9.-]+``; a ``scope`` outside global / project / module; a backslash in a path.

Warnings (KCP 7 "SHOULD warn, MUST NOT reject"): a missing unit file; unknown
``depends_on`` or relationship ids; triggers over 60 characters (truncated) or beyond the
20th (ignored); unknown audience values or relationship types; an unknown ``kcp_version``
(validated with the rules of ``TARGET_VERSION``); duplicate ids (the first is kept); absent
RECOMMENDED fields; an intent that is just the file name (KCP 4.4).

Refused before validation (``ManifestError``, a "parse error"): not UTF-8, a BOM, not YAML
or more than the core schema (see ``yamlsafe``), a root that is not a mapping, more units
than the limit, a unit path that is absolute or escapes the manifest's directory.

Silently handled (KCP 4.7): a ``depends_on`` edge that closes a cycle is dropped and listed
in ``Manifest.ignored_edges``. Fields added after v0.1 are checked in ``extensions``.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from sediment.kcp.errors import ManifestError
from sediment.kcp.extensions import check as check_extensions
from sediment.kcp.federation_rules import REL_TYPES as RELATIONSHIP_TYPES
from sediment.kcp.graph import break_cycles
from sediment.kcp.model import Issue, Manifest, Relationship, Unit, ValidationResult
from sediment.kcp.paths import inside, normalize_path
from sediment.kcp.report import DATE, SEMVER, Report, as_str_list, scalar_str
from sediment.kcp.yamlsafe import LIMITS, Limits, load_yaml

__all__ = [
    "AUDIENCES",
    "KNOWN_VERSIONS",
    "RELATIONSHIP_TYPES",
    "SCOPES",
    "TARGET_VERSION",
    "parse_manifest",
    "validate_file",
    "validate_manifest",
]

TARGET_VERSION = "0.14"
KNOWN_VERSIONS = frozenset(f"0.{n}" for n in range(1, 15))
SCOPES = ("global", "project", "module")
AUDIENCES = frozenset({"human", "agent", "developer", "architect", "operator", "devops"})
ID = re.compile(r"[a-z0-9.\-]+")
MAX_TRIGGER_CHARS = 60
MAX_TRIGGERS = 20
REQUIRED = ("id", "path", "intent", "scope", "audience")


def validate_file(path: str | os.PathLike[str], *, limits: Limits = LIMITS,
                  check_files: bool = True) -> ValidationResult:
    """Validate the manifest at ``path``; unit files are looked up beside it.

    A file that cannot be read raises ``ManifestError`` (rule ``io``); one that cannot be
    parsed gives a result with ``parse_error``.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > limits.max_bytes:
            raise ManifestError(f"{size:,} bytes is over the limit of {limits.max_bytes:,}",
                                rule="limit.size", source=str(p))
        data = p.read_bytes()
    except OSError as exc:
        raise ManifestError(f"cannot read: {exc.strerror or exc}", rule="io",
                            source=str(p)) from exc
    except ManifestError as exc:
        return _parse_failure(str(p), exc)
    return validate_manifest(data, source=str(p), base_dir=p.parent if check_files else None,
                             limits=limits)


def validate_manifest(data: bytes | str, *, source: str = "knowledge.yaml",
                      base_dir: Path | None = None, limits: Limits = LIMITS
                      ) -> ValidationResult:
    """Never raises for a bad manifest: a parse failure is a result with ``parse_error``."""
    try:
        return parse_manifest(data, source=source, base_dir=base_dir, limits=limits)
    except ManifestError as exc:
        return _parse_failure(source, exc)


def parse_manifest(data: bytes | str, *, source: str = "knowledge.yaml",
                   base_dir: Path | None = None, limits: Limits = LIMITS) -> ValidationResult:
    """Parse and validate; raises ``ManifestError`` when the manifest cannot be parsed.

    With ``base_dir`` (the manifest's directory), unit files are checked to exist and to
    stay inside it after symlinks.
    """
    loaded = load_yaml(data, source=source, limits=limits)
    root = loaded.value
    if not isinstance(root, Mapping):
        kind = "empty" if root is None else f"a {type(root).__name__}"
        raise ManifestError(f"the document is {kind}, not a mapping, so it is not a KCP "
                            "manifest", rule="root.type", source=source)
    report = Report()
    version = _kcp_version(root, loaded.kcp_version_raw, report)
    project = _project(root, report)
    manifest_version = _optional_text(root, "version", report, SEMVER, "a semver version")
    updated = _optional_text(root, "updated", report, DATE, "a YYYY-MM-DD date")
    entries = _unit_entries(root, report, limits, source)
    units: list[Unit] = []
    raw_units: list[tuple[Mapping[str, Any], Unit | None]] = []
    seen: set[str] = set()
    count = 0
    for n, entry in enumerate(entries):
        unit = _unit(entry, n, report, source)
        if unit is not None and unit.id in seen:
            report.warn("unit.id.duplicate", f"duplicate id; the first unit with it is kept "
                        f"(this is units[{n}])", unit.id, "id")
            continue
        count += 1
        if isinstance(entry, Mapping):
            raw_units.append((entry, unit))
        if unit is not None:
            seen.add(unit.id)
            units.append(unit)
    units, ignored = _resolve_depends_on(units, report)
    relationships, rel_count = _relationships(root.get("relationships"), seen, report)
    manifest = Manifest(project=project, kcp_version=version, version=manifest_version,
                        updated=updated, units=units, relationships=relationships,
                        ignored_edges=ignored, raw=root)
    _recommended(units, report)
    manifest.manifests = check_extensions(root, raw_units, manifest, report, source)
    if base_dir is not None:
        _check_files(base_dir, units, report)
    return ValidationResult(source, report.errors, report.warnings, count, rel_count,
                            manifest)


def _parse_failure(source: str, exc: ManifestError) -> ValidationResult:
    return ValidationResult(source, [Issue("error", exc.rule, str(exc.detail))],
                            parse_error=True)


def _kcp_version(root: Mapping[str, Any], raw: str | None, report: Report) -> str | None:
    if "kcp_version" not in root:
        report.warn("kcp_version.missing", "kcp_version is RECOMMENDED (KCP 3.1); validated "
                    f"with the rules of {TARGET_VERSION}", field="kcp_version")
        return None
    value = root["kcp_version"]
    text = value if isinstance(value, str) else raw if raw is not None else scalar_str(value)
    if not isinstance(value, str):
        report.warn("kcp_version.type", f"kcp_version should be a quoted string; read "
                    f"{text!r}", field="kcp_version")
    if text is None:
        return None
    if text not in KNOWN_VERSIONS:
        report.warn("kcp_version.unknown", f"unknown kcp_version {text!r}; validated with the "
                    f"rules of {TARGET_VERSION}, the closest known (KCP 6.1)",
                    field="kcp_version")
    return text


def _project(root: Mapping[str, Any], report: Report) -> str:
    value = root.get("project")
    text = scalar_str(value)
    if text is None and value is not None:
        report.error("project.type", f"project must be a string, got {type(value).__name__}",
                     field="project")
        return ""
    if not text or not text.strip():
        report.error("project.required", "project is REQUIRED and must not be empty (KCP 7)",
                     field="project")
        return ""
    if not isinstance(value, str):
        report.warn("project.type", "project should be a string", field="project")
    return text.strip()


def _optional_text(root: Mapping[str, Any], key: str, report: Report, pattern: re.Pattern[str],
                   what: str) -> str | None:
    value = root.get(key)
    if value is None:
        if key not in root:
            report.warn(f"{key}.missing", f"{key} is RECOMMENDED (KCP 3.1)", field=key)
        return None
    text = scalar_str(value)
    if text is None or not pattern.fullmatch(text):
        report.warn(f"{key}.format", f"{key} should be {what}, got {value!r}", field=key)
    return text


def _unit_entries(root: Mapping[str, Any], report: Report, limits: Limits,
                  source: str) -> list[Any]:
    value = root.get("units")
    if value is None:
        report.error("units.required", "units is REQUIRED (KCP 7)", field="units")
        return []
    if not isinstance(value, list):
        report.error("units.type", f"units must be a list, got {type(value).__name__}",
                     field="units")
        return []
    if not value:
        report.error("units.empty", "units must contain at least one unit (KCP 3.1)",
                     field="units")
    if len(value) > limits.max_units:
        raise ManifestError(f"{len(value):,} units is over the limit of {limits.max_units:,}",
                            rule="limit.units", source=source)
    return value


def _unit(entry: Any, n: int, report: Report, source: str) -> Unit | None:
    label = f"units[{n}]"
    if not isinstance(entry, Mapping):
        report.error("unit.type", f"{label} must be a mapping, got {type(entry).__name__}")
        return None
    for key in REQUIRED:
        value = entry.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            name = scalar_str(entry.get("id")) if key != "id" else None
            what = "missing" if key not in entry or value is None else "empty"
            report.error(f"unit.{key}.required", f"required field {key!r} is {what} "
                         f"(KCP 7)", name or label, key)
    uid = _unit_id(entry, label, report)
    who = uid or label
    path = _unit_path(entry.get("path"), who, report, source)
    intent = _intent(entry.get("intent"), path, who, report)
    scope = _scope(entry.get("scope"), who, report)
    audience = _audience(entry.get("audience"), who, report)
    validated = _validated(entry.get("validated"), who, report)
    depends = as_str_list(entry.get("depends_on"), report, "unit.depends_on.type",
                          "depends_on", who)
    supersedes = entry.get("supersedes")
    if supersedes is not None and not isinstance(supersedes, str):
        report.warn("unit.supersedes.type", "supersedes must be one unit id; ignored", who,
                    "supersedes")
        supersedes = None
    triggers = _triggers(entry.get("triggers"), who, report)
    if uid is None:
        return None
    return Unit(id=uid, path=path, intent=intent, scope=scope, audience=tuple(audience),
                index=n, validated=validated, declared_depends_on=tuple(depends),
                supersedes=supersedes or None, triggers=tuple(triggers), raw=entry)


def _unit_id(entry: Mapping[str, Any], label: str, report: Report) -> str | None:
    value = entry.get("id")
    if value is None:
        return None
    text = scalar_str(value)
    if text is None:
        report.error("unit.id.type", f"id must be a string, got {type(value).__name__}",
                     label, "id")
        return None
    if not isinstance(value, str):
        report.warn("unit.id.type", f"id should be a quoted string; read {text!r}", text, "id")
    if text and not ID.fullmatch(text):
        report.error("unit.id.pattern", "id must contain only a-z, 0-9, '-' and '.' "
                     "(KCP 4.2)", text, "id")
    return text or None


def _unit_path(value: Any, who: str, report: Report, source: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        report.error("unit.path.type", f"path must be a string, got {type(value).__name__}",
                     who, "path")
        return ""
    if not value.strip():
        return ""
    norm = normalize_path(value, what=f"unit {who!r} path", source=source)
    if "\\" in value:
        report.error("unit.path.separator", "paths MUST use forward slashes (KCP 4.3)", who,
                     "path")
    if norm == ".":
        report.warn("unit.path.directory", "path names the manifest's own directory", who,
                    "path")
    return norm


def _intent(value: Any, path: str, who: str, report: Report) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        report.error("unit.intent.type", f"intent must be a string, got "
                     f"{type(value).__name__}", who, "intent")
        return ""
    intent = " ".join(value.split())
    if "\n" in value.strip():
        report.warn("unit.intent.sentence", "intent MUST be a single sentence (KCP 4.4)", who,
                    "intent")
    if path and intent and intent.lower() in {path.lower(), posixpath.basename(path).lower(),
                                              posixpath.splitext(posixpath.basename(path))[0]
                                              .lower()}:
        report.warn("unit.intent.filename", "intent repeats the file name; KCP 4.4 asks for "
                    "the question the unit answers, or no intent at all", who, "intent")
    return intent


def _scope(value: Any, who: str, report: Report) -> str:
    if value is None:
        return "global"
    if not isinstance(value, str) or (value.strip() and value not in SCOPES):
        report.error("unit.scope.enum", f"'scope' must be one of [{', '.join(sorted(SCOPES))}],"
                     f" got {value!r}", who, "scope")
    return value if isinstance(value, str) and value in SCOPES else "global"


def _audience(value: Any, who: str, report: Report) -> list[str]:
    if value is None:
        return []
    values = as_str_list(value, report, "unit.audience.type", "audience", who)
    if isinstance(value, list) and not value:
        report.warn("unit.audience.empty", "audience should name at least one reader "
                    "(KCP 4.6)", who, "audience")
    for item in values:
        if item not in AUDIENCES:
            report.warn("unit.audience.unknown", f"unknown audience value {item!r}; it is "
                        "ignored when matching (KCP 4.6)", who, "audience")
    return values


def _validated(value: Any, who: str, report: Report) -> str | None:
    if value is None:
        return None
    text = scalar_str(value)
    if text is None or not DATE.fullmatch(text):
        report.warn("unit.validated.format", f"validated should be a YYYY-MM-DD date, got "
                    f"{value!r}", who, "validated")
    return text


def _triggers(value: Any, who: str, report: Report) -> list[str]:
    items = []
    for t in as_str_list(value, report, "unit.triggers.type", "triggers", who):
        if t.strip():
            items.append(t)
        else:
            report.warn("unit.triggers.empty", "empty trigger ignored", who, "triggers")
    if len(items) > MAX_TRIGGERS:
        report.warn("unit.triggers.count", f"{len(items)} triggers; only the first "
                    f"{MAX_TRIGGERS} are used (KCP 4.9)", who, "triggers")
        items = items[:MAX_TRIGGERS]
    out = []
    for t in items:
        if len(t) > MAX_TRIGGER_CHARS:
            report.warn("unit.triggers.length", f"trigger {t[:20]!r}... has {len(t)} "
                        f"characters; truncated to {MAX_TRIGGER_CHARS} (KCP 4.9)", who,
                        "triggers")
            t = t[:MAX_TRIGGER_CHARS]
        out.append(t)
    return out


def _resolve_depends_on(units: list[Unit], report: Report
                        ) -> tuple[list[Unit], list[tuple[str, str]]]:
    ids = {u.id for u in units}
    for u in units:
        for dep in u.declared_depends_on:
            if dep not in ids:
                report.warn("unit.depends_on.unknown", f"depends_on references unknown unit "
                            f"{dep!r}; ignored (KCP 4.7)", u.id, "depends_on")
    edges = {u.id: [d for d in u.declared_depends_on if d in ids] for u in units}
    kept, dropped = break_cycles([u.id for u in units], edges)
    return [replace(u, depends_on=tuple(kept[u.id])) for u in units], dropped


def _relationships(value: Any, ids: set[str], report: Report
                   ) -> tuple[list[Relationship], int]:
    if value is None:
        return [], 0
    if not isinstance(value, list):
        report.warn("relationships.type", "relationships must be a list; ignored",
                    field="relationships")
        return [], 0
    out: list[Relationship] = []
    count = 0
    for n, entry in enumerate(value):
        where = f"relationships[{n}]"
        if not isinstance(entry, Mapping):
            report.warn("relationship.type", f"{where} must be a mapping; ignored",
                        field="relationships")
            continue
        count += 1
        ends = [scalar_str(entry.get(k)) for k in ("from", "to")]
        rtype = scalar_str(entry.get("type"))
        if ends[0] is None or ends[1] is None or rtype is None:
            report.warn("relationship.fields", f"{where} needs from, to and type; ignored",
                        field="relationships")
            continue
        known = rtype in RELATIONSHIP_TYPES
        if not known:
            report.warn("relationship.type.unknown", f"{where}: relationship type {rtype!r} "
                        "is not in the known set; ignored (KCP 5)", field="relationships")
        missing = [e for e in ends if e not in ids]
        for e in missing:
            report.warn("relationship.unknown-id", f"{where} references unknown unit {e!r}; "
                        "ignored (KCP 5)", field="relationships")
        out.append(Relationship(ends[0], ends[1], rtype, known, not missing))
    return out, count


def _recommended(units: list[Unit], report: Report) -> None:
    undated = [u.id for u in units if u.validated is None]
    if undated:
        shown = ", ".join(undated[:5]) + (", ..." if len(undated) > 5 else "")
        report.warn("unit.validated.missing", f"{len(undated)} unit(s) have no validated date "
                    f"(RECOMMENDED, KCP 4.1): {shown}", field="validated")


def _check_files(base: Path, units: list[Unit], report: Report) -> None:
    for u in units:
        if not u.path:
            continue
        target = base / u.path
        if not os.path.lexists(target):
            report.warn("unit.path.missing", f"{u.path} does not exist (KCP 4.3: a warning, "
                        "not an error)", u.id, "path")
        elif inside(base, u.path) is None:
            report.error("unit.path.escape", f"{u.path} resolves outside the manifest's "
                         "directory through a symlink (KCP 12)", u.id, "path")
