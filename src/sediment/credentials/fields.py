"""The checks every field an agent writes into a memory or a context item goes through.

One place for both stores, so no free-text field is forgotten: text must hold something
besides whitespace and no credential (names, tags, tool calls and metadata strings as much
as the content); numbers must be finite (``Infinity`` and ``NaN`` are not JSON, and a strict
reader of the layer would refuse them); metadata must be a JSON object of bounded size and
nesting. Each error names the field and, inside metadata, the path to the bad value.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from sediment.credentials.detect import refuse_credentials
from sediment.errors import ValidationError

__all__ = ["MAX_METADATA_BYTES", "MAX_METADATA_DEPTH", "check_metadata", "check_number",
           "check_text", "check_texts"]

MAX_METADATA_BYTES = 64 * 1024
"""Metadata as compact JSON: enough for any record of a step, far from a file's worth."""
MAX_METADATA_DEPTH = 32


def check_text(value: object, field: str, *, optional: bool = False) -> str | None:
    """``value`` as text that is not empty or whitespace only and holds no credential;
    None when ``optional`` and it is None."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be text, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError(f"{field} must not be empty or whitespace only")
    refuse_credentials(value, field)
    return value


def check_texts(values: Iterable[object] | None, field: str) -> list[str]:
    """Each of a list of texts (tags, tool calls, artifacts), checked as ``check_text``."""
    if values is None:
        return []
    if isinstance(values, str | bytes):
        raise ValidationError(f"{field} must be a list of texts, not one text")
    return [str(check_text(v, f"{field}[{i}]")) for i, v in enumerate(values)]


def check_number(value: object, field: str, *, minimum: float | None = None) -> float:
    """A finite number (not a boolean), at least ``minimum`` when given."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{field} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValidationError(f"{field} must be a finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValidationError(f"{field} must be at least {minimum}, got {value!r}")
    return float(value)


def _walk(value: Any, field: str) -> list[tuple[str, str]]:
    """Check nesting, value types and finiteness without recursion (a 900-deep object
    must be an error, not a RecursionError); (where, text) of every key and string, a
    string preceded by its key so that ``password: ...`` reads as an assignment."""
    lines: list[tuple[str, str]] = []
    stack: list[tuple[Any, str, str, int]] = [(value, field, field, 1)]
    while stack:
        v, where, key, depth = stack.pop()
        if isinstance(v, Mapping | list | tuple) and depth > MAX_METADATA_DEPTH:
            raise ValidationError(f"{field} is nested more than {MAX_METADATA_DEPTH} levels "
                                  f"deep (at {where})")
        if isinstance(v, Mapping):
            for k, item in v.items():
                if not isinstance(k, str):
                    raise ValidationError(f"{where}: keys must be text, got "
                                          f"{type(k).__name__}")
                lines.append((f"{where} (a key)", k))
                stack.append((item, f"{where}.{k}", k, depth + 1))
        elif isinstance(v, list | tuple):
            stack.extend((item, f"{where}[{i}]", key, depth + 1) for i, item in enumerate(v))
        elif isinstance(v, str):
            lines.append((where, f"{key} = {v}"))
        elif isinstance(v, float) and not math.isfinite(v):
            raise ValidationError(f"{where} must be a finite number, got {v!r} (not JSON)")
        elif v is not None and not isinstance(v, bool | int | float):
            raise ValidationError(f"{where} must be JSON (text, number, true/false, null, "
                                  f"list or object), got {type(v).__name__}")
    return lines


def check_metadata(value: object, field: str = "metadata") -> dict[str, Any]:
    """A JSON object of at most ``MAX_METADATA_DEPTH`` levels and ``MAX_METADATA_BYTES``
    bytes, finite numbers only, no credential in any key or string."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(f"{field} must be an object, got {type(value).__name__}")
    lines = _walk(value, field)
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))
               .encode("utf-8", "surrogatepass"))  # a lone surrogate is named below
    if size > MAX_METADATA_BYTES:
        raise ValidationError(f"{field} is {size:,} bytes as JSON; the limit is "
                              f"{MAX_METADATA_BYTES:,}")
    for where, text in lines:
        refuse_credentials(text, where)
    return dict(value)
