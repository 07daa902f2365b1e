"""Encoding and bounded decoding of the layer metadata JSON blob (RFC 8.4.8).

The blob comes from whoever wrote the file, so decoding it must fail as a FormatError, never
as RecursionError (``[`` repeated 50,000 times) or ValueError (a 5,000-digit integer is past
Python's int-from-text limit). The bounds are far above anything an embedding profile or
embedder metadata needs:

- nesting: at most :data:`MAX_DEPTH` (32) arrays/objects inside one another;
- numbers: at most :data:`MAX_NUMBER_CHARS` (64) characters each, and finite as a double
  (``1e999`` would become infinity, which JSON cannot write back);
- ``NaN``, ``Infinity`` and ``-Infinity`` are refused: they are not JSON (RFC 8259), and
  Sediment could not write the metadata back when it appends to the layer.

The blob's size needs no bound of its own: it is part of a file that is already mapped,
and decoding it costs time and memory in proportion to it.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 32
MAX_NUMBER_CHARS = 64


class MetadataError(ValueError):
    """What is wrong with a blob, and the byte position it was found at (if known)."""

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


def encode_metadata(metadata: dict[str, Any]) -> bytes:
    """Deterministic JSON: sorted keys, no spaces, UTF-8, no NaN."""
    return json.dumps(metadata, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False).encode("utf-8")


def decode_metadata(raw: bytes) -> dict[str, Any]:
    """The blob as a JSON object within the bounds above, else :class:`MetadataError`."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MetadataError("is not UTF-8", exc.start) from exc

    def number(token: str, convert: type[int] | type[float]) -> int | float:
        if len(token) > MAX_NUMBER_CHARS:
            at = text.find(token)
            raise MetadataError(f"holds a number of {len(token):,} characters; the limit is "
                                f"{MAX_NUMBER_CHARS}", _byte_position(text, at))
        value = convert(token)
        if value in (float("inf"), float("-inf")):
            raise MetadataError(f"holds the number {token}, beyond the range of a double",
                                _byte_position(text, text.find(token)))
        return value

    def constant(token: str) -> Any:
        raise MetadataError(f"holds {token}, which is not JSON",
                            _byte_position(text, text.find(token)))

    try:
        value = json.loads(text, parse_int=lambda t: number(t, int),
                           parse_float=lambda t: number(t, float), parse_constant=constant)
    except RecursionError:
        raise MetadataError(f"nests arrays or objects deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise MetadataError(f"is not JSON: {exc.msg}",
                            _byte_position(text, exc.pos)) from exc
    if not isinstance(value, dict):
        raise MetadataError("must be a JSON object", 0)
    if _deeper_than(value, MAX_DEPTH):
        raise MetadataError(f"nests arrays or objects deeper than {MAX_DEPTH} levels")
    return value


def _byte_position(text: str, index: int) -> int | None:
    return len(text[:index].encode("utf-8")) if index >= 0 else None


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether containers nest more than ``limit`` deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
