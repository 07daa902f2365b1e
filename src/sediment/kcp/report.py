"""Collecting findings while reading a manifest, and typed access to its loose values."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from sediment.kcp.model import Issue

__all__ = ["DATE", "SEMVER", "Report", "as_mapping", "as_str_list", "known", "scalar_str"]

DATE = re.compile(r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])")
SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?")


class Report:
    """Errors make a manifest invalid; warnings never do (KCP 7)."""

    def __init__(self) -> None:
        self.errors: list[Issue] = []
        self.warnings: list[Issue] = []

    def error(self, rule: str, message: str, unit: str | None = None,
              field: str | None = None) -> None:
        self.errors.append(Issue("error", rule, message, unit, field))

    def warn(self, rule: str, message: str, unit: str | None = None,
             field: str | None = None) -> None:
        self.warnings.append(Issue("warning", rule, message, unit, field))


def scalar_str(value: Any) -> str | None:
    """A string, or a number's text as written; None for anything else (bools included)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = getattr(value, "text", None)
        return text if isinstance(text, str) else str(value)
    return None


def known(value: Any, vocabulary: Collection[str]) -> bool:
    """Whether ``value`` is one of the strings of ``vocabulary`` (safe for any value)."""
    return isinstance(value, str) and value in vocabulary


def as_mapping(value: Any, report: Report, rule: str, field: str,
               unit: str | None = None) -> Mapping[str, Any] | None:
    """``value`` when it is a mapping; otherwise warn (when present) and return None."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value
    report.warn(rule, f"must be a mapping, got {type(value).__name__}; ignored", unit, field)
    return None


def as_str_list(value: Any, report: Report, rule: str, field: str,
                unit: str | None = None) -> list[str]:
    """A list of strings: a lone string becomes a one-item list, other items are dropped;
    each fix is a warning."""
    if value is None:
        return []
    if isinstance(value, str):
        report.warn(rule, "should be a list; read the string as a one-item list", unit, field)
        return [value]
    if not isinstance(value, list):
        report.warn(rule, f"must be a list, got {type(value).__name__}; ignored", unit, field)
        return []
    out: list[str] = []
    for item in value:
        text = scalar_str(item)
        if text is None:
            report.warn(rule, f"item {item!r} is not a string; ignored", unit, field)
        else:
            out.append(text)
    return out
