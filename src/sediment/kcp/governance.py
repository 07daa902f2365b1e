"""Rules of the governance blocks added after v0.1: compliance, delegation, auth, trust.

Errors, where the spec says MUST or gives a closed set the conformance suite enforces:
``compliance.sensitivity`` outside public / internal / confidential / restricted (KCP 3.5);
``delegation.max_depth`` not a non-negative integer, or a unit's above the root's (3.4);
``human_in_the_loop.approval_mechanism`` outside oauth_consent / uma / custom, or ``custom``
without ``docs_url`` (3.4); an ``oauth2`` method without an HTTPS ``issuer`` or an
``api_key`` method without ``header`` (3.3); a ``trust.provenance.publisher_url`` that is not
HTTPS (3.2). Everything else unexpected is a warning, and unknown sub-fields are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sediment.kcp.report import Report, as_mapping, as_str_list, known

__all__ = ["SENSITIVITY", "check_auth", "check_compliance", "check_delegation", "check_trust"]

SENSITIVITY = ("public", "internal", "confidential", "restricted")
APPROVAL = ("custom", "oauth_consent", "uma")
AUTH_TYPES = frozenset({"none", "oauth2", "api_key"})


def check_compliance(value: Any, report: Report, unit: str | None = None) -> None:
    block = as_mapping(value, report, "compliance.type", "compliance", unit)
    if block is None:
        return
    sensitivity = block.get("sensitivity")
    if sensitivity is not None and not known(sensitivity, SENSITIVITY):
        report.error("compliance.sensitivity", "compliance.sensitivity must be one of "
                     f"[{', '.join(sorted(SENSITIVITY))}], got {sensitivity!r} (KCP 3.5)",
                     unit, "compliance.sensitivity")
    for key in ("data_residency", "regulations", "restrictions"):
        as_str_list(block.get(key), report, "compliance.type", f"compliance.{key}", unit)


def check_delegation(value: Any, report: Report, unit: str | None = None,
                     root_max: int | None = None) -> int | None:
    """Check a delegation block; returns its valid ``max_depth``, if any."""
    block = as_mapping(value, report, "delegation.type", "delegation", unit)
    if block is None:
        return None
    depth = block.get("max_depth")
    valid_depth: int | None = None
    if depth is not None:
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            report.error("delegation.max_depth.type", "delegation.max_depth must be a "
                         f"non-negative integer, got {depth!r} (KCP 3.4)", unit,
                         "delegation.max_depth")
        else:
            valid_depth = depth
            if unit is not None and root_max is not None and depth > root_max:
                report.error("delegation.max_depth.exceeds-root", f"unit delegation.max_depth "
                             f"({depth}) must not exceed root delegation.max_depth "
                             f"({root_max}) (KCP 3.4)", unit, "delegation.max_depth")
    for flag in ("require_capability_attenuation", "require_delegation_proof", "audit_chain"):
        if flag in block and not isinstance(block[flag], bool):
            report.warn("delegation.flag.type", f"delegation.{flag} should be a boolean",
                        unit, f"delegation.{flag}")
    _check_hitl(block.get("human_in_the_loop"), report, unit)
    return valid_depth


def _check_hitl(value: Any, report: Report, unit: str | None) -> None:
    field = "delegation.human_in_the_loop"
    block = as_mapping(value, report, "delegation.hitl.type", field, unit)
    if block is None:
        return
    if "required" in block and not isinstance(block["required"], bool):
        report.warn("delegation.hitl.required", f"{field}.required should be a boolean", unit,
                    f"{field}.required")
    mechanism = block.get("approval_mechanism")
    if mechanism is not None and not known(mechanism, APPROVAL):
        report.error("delegation.hitl.mechanism", f"{field}.approval_mechanism must be one "
                     f"of [{', '.join(APPROVAL)}], got {mechanism!r} (KCP 3.4)", unit,
                     f"{field}.approval_mechanism")
    if mechanism == "custom" and not block.get("docs_url"):
        report.error("delegation.hitl.docs_url", f"{field}.docs_url is REQUIRED when "
                     "approval_mechanism is custom (KCP 3.4)", unit, f"{field}.docs_url")


def check_auth(value: Any, report: Report) -> bool:
    """Check the root ``auth`` block; returns whether one is declared."""
    block = as_mapping(value, report, "auth.type", "auth")
    if block is None:
        return False
    methods = block.get("methods")
    if methods is None:
        return True
    if not isinstance(methods, list):
        report.warn("auth.methods.type", "auth.methods must be a list", field="auth.methods")
        return True
    recognised = 0
    for n, method in enumerate(methods):
        where = f"auth.methods[{n}]"
        if not isinstance(method, Mapping) or "type" not in method:
            report.warn("auth.method.type", f"{where} must be a mapping with a type",
                        field=where)
            continue
        kind = method.get("type")
        if not known(kind, AUTH_TYPES):
            continue
        recognised += 1
        if kind == "oauth2":
            issuer = method.get("issuer")
            if not isinstance(issuer, str) or not issuer.startswith("https://"):
                report.error("auth.oauth2.issuer", f"{where}.issuer is REQUIRED and MUST use "
                             f"HTTPS, got {issuer!r} (KCP 3.3)", field=f"{where}.issuer")
        elif kind == "api_key" and not isinstance(method.get("header"), str):
            report.error("auth.api_key.header", f"{where}.header is REQUIRED (KCP 3.3)",
                         field=f"{where}.header")
    if methods and not recognised:
        report.warn("auth.methods.unrecognised", "auth.methods holds no method type this "
                    "validator recognises (none, oauth2, api_key)", field="auth.methods")
    return True


def check_trust(value: Any, report: Report) -> None:
    block = as_mapping(value, report, "trust.type", "trust")
    if block is None:
        return
    provenance = as_mapping(block.get("provenance"), report, "trust.type", "trust.provenance")
    url = provenance.get("publisher_url") if provenance else None
    if url is not None and (not isinstance(url, str) or not url.startswith("https://")):
        report.error("trust.publisher_url", "trust.provenance.publisher_url MUST use HTTPS, "
                     f"got {url!r} (KCP 3.2)", field="trust.provenance.publisher_url")
    as_mapping(block.get("audit"), report, "trust.type", "trust.audit")
