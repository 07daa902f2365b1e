"""Read a manifest's YAML safely and in bounded time and memory.

``yaml.safe_load`` is not enough for manifests from untrusted places (KCP 12):

- it resolves YAML 1.1 types, while KCP manifests are YAML 1.2 (KCP 2): under 1.1 ``no`` is
  false, ``2026-02-25`` a date and ``0o17`` a string;
- it accepts tags that build more than primitives (``!!set``, ``!!binary``,
  ``!!timestamp``); KCP 12.2 wants anything beyond primitive types rejected;
- its composer recurses, so deep nesting ends in ``RecursionError`` (libyaml's composer may
  overflow the C stack instead);
- an alias is loaded as a shared reference, so a "billion laughs" document loads in
  microseconds and explodes later in whatever walks or serialises it.

So values are built here from the parser's event stream (libyaml when present; both parsers
keep explicit stacks, neither recurses) under the YAML 1.2 core schema: plain scalars become
null, booleans, integers or floats by the 1.2 rules, everything else is a string; only the
core tags (str, int, float, bool, null, seq, map) are allowed; numbers keep the text they
were written as (``YamlInt.text``), so an unquoted ``id: 007`` still reads as ``007``.

While building, it enforces ``Limits``: bytes, nesting depth, characters per scalar, and the
*expanded* node count, in which an alias counts as everything it repeats, so a
billion-laughs manifest is refused after reading a few hundred bytes. Recursive aliases,
complex mapping keys, duplicate keys (YAML 1.2 forbids them) and more than one document
are refused too.
"""

from __future__ import annotations

import codecs
import math
import re
from dataclasses import dataclass
from typing import Any

import yaml

from sediment.kcp.errors import ManifestError

__all__ = ["LIMITS", "Limits", "Loaded", "YamlFloat", "YamlInt", "decode_manifest", "load_yaml"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds for one manifest (KCP 12, denial of service). Remote ones use smaller bytes."""

    max_bytes: int = 4 * 1024 * 1024
    max_units: int = 10_000
    max_nodes: int = 1_000_000
    max_depth: int = 64
    max_string: int = 16_384


LIMITS = Limits()

_CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_CORE}{t}": t for t in ("str", "int", "float", "bool", "null")}
_SEQ_TAGS = {None, "!", f"{_CORE}seq"}
_MAP_TAGS = {None, "!", f"{_CORE}map"}
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TRUES = frozenset({"true", "True", "TRUE"})
_FALSES = frozenset({"false", "False", "FALSE"})
_FIRST = frozenset("~nNtTfF.+-0123456789")
_INT = re.compile(r"[-+]?[0-9]+")
_OCT = re.compile(r"0o[0-7]+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_INF = re.compile(r"[-+]?\.(inf|Inf|INF)")
_NAN = re.compile(r"\.(nan|NaN|NAN)")
_MAX_NUMBER = 100
_WIDE_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
              (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))
_PENDING = object()


class YamlInt(int):
    """An integer that remembers how it was written (``007``, ``0x1F``)."""

    text: str


class YamlFloat(float):
    """A float that remembers how it was written (``1e100``, ``0.10``)."""

    text: str


def _number(cls: type[YamlInt] | type[YamlFloat], value: float, text: str) -> Any:
    out = cls(value)
    out.text = text
    return out


@dataclass(frozen=True, slots=True)
class Loaded:
    """The document's value and the raw text of its root ``kcp_version`` scalar.

    The raw text matters because an unquoted ``kcp_version: 0.10`` is the float 0.1.
    """

    value: Any
    kcp_version_raw: str | None = None


def decode_manifest(data: bytes, *, source: str = "", limits: Limits = LIMITS) -> str:
    """UTF-8 text of ``data``; a BOM, another encoding or too many bytes is a ManifestError."""
    if len(data) > limits.max_bytes:
        raise ManifestError(f"{len(data):,} bytes is over the limit of {limits.max_bytes:,}",
                            rule="limit.size", source=source)
    if data.startswith(codecs.BOM_UTF8):
        raise ManifestError("starts with a UTF-8 byte order mark; a manifest MUST be UTF-8 "
                            "without a BOM (KCP 2)", rule="encoding.bom", source=source)
    for bom, name in _WIDE_BOMS:
        if data.startswith(bom):
            raise ManifestError(f"is {name}; a manifest MUST be UTF-8 (KCP 2)",
                                rule="encoding.utf8", source=source)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ManifestError(f"is not UTF-8: invalid byte 0x{data[exc.start]:02x} at offset "
                            f"{exc.start} (KCP 2)", rule="encoding.utf8", source=source,
                            line=line) from None


_LIBYAML_MAX_DEPTH = 1000


def load_yaml(data: bytes | str, *, source: str = "", limits: Limits = LIMITS) -> Loaded:
    """Build the document's value; any problem is a ``ManifestError`` naming its rule."""
    if isinstance(data, bytes):
        text = decode_manifest(data, source=source, limits=limits)
    else:
        text = data
        if len(text) > limits.max_bytes:
            raise ManifestError(f"{len(text):,} characters is over the limit of "
                                f"{limits.max_bytes:,}", rule="limit.size", source=source)
        if text.startswith("\ufeff"):
            raise ManifestError("starts with a byte order mark; a manifest MUST be UTF-8 "
                                "without a BOM (KCP 2)", rule="encoding.bom", source=source)
    builder = _Builder(limits, source)
    loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    try:
        for event in yaml.parse(text, Loader=loader):
            builder.feed(event)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = mark.line + 1 if mark is not None else None
        if "maximum nesting depth" in problem:
            # libyaml in newer PyYAML wheels stops at 1,000 levels while scanning ahead,
            # before the builder has seen the events that would trip our own limit.
            depth = min(limits.max_depth, _LIBYAML_MAX_DEPTH)
            raise ManifestError(f"nesting is deeper than {depth:,} levels", rule="limit.depth",
                                source=source, line=line) from None
        raise ManifestError(f"not valid YAML: {problem}", rule="yaml.syntax", source=source,
                            line=line) from None
    except (UnicodeError, ValueError) as exc:
        raise ManifestError(f"cannot be read as YAML: {exc}", rule="yaml.syntax",
                            source=source) from None
    return Loaded(builder.root, builder.version_raw)


@dataclass(slots=True)
class _Frame:
    container: list[Any] | dict[Any, Any]
    anchor: str | None
    size: int = 1
    key: Any = _PENDING


class _Builder:
    """Turns parser events into values, counting what aliases expand to."""

    def __init__(self, limits: Limits, source: str) -> None:
        self.limits = limits
        self.source = source
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.open_anchors: set[str] = set()
        self.nodes = 0
        self.documents = 0
        self.root: Any = None
        self.version_raw: str | None = None

    def fail(self, message: str, rule: str, event: Any) -> ManifestError:
        mark = getattr(event, "start_mark", None)
        return ManifestError(message, rule=rule, source=self.source,
                             line=mark.line + 1 if mark is not None else None)

    def feed(self, event: Any) -> None:
        if isinstance(event, yaml.ScalarEvent):
            value = self.scalar(event)
            self.count(1, event)
            if event.anchor:
                self.anchors[event.anchor] = (value, 1)
            self.add(value, 1, event, raw=event.value)
        elif isinstance(event, yaml.AliasEvent):
            anchor = event.anchor
            if anchor in self.open_anchors:
                raise self.fail(f"alias *{anchor} refers to a collection that contains it "
                                "(recursive aliases are not allowed)", "yaml.alias", event)
            if anchor not in self.anchors:
                raise self.fail(f"alias *{anchor} has no anchor", "yaml.alias", event)
            value, size = self.anchors[anchor]
            self.count(size, event)
            self.add(value, size, event)
        elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            is_map = isinstance(event, yaml.MappingStartEvent)
            if event.tag not in (_MAP_TAGS if is_map else _SEQ_TAGS):
                raise self.fail(self.tag_message(event.tag), "yaml.tag", event)
            self.count(1, event)
            if len(self.stack) >= self.limits.max_depth:
                raise self.fail(f"nesting is deeper than {self.limits.max_depth} levels",
                                "limit.depth", event)
            if event.anchor:
                self.open_anchors.add(event.anchor)
            self.stack.append(_Frame({} if is_map else [], event.anchor))
        elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            frame = self.stack.pop()
            if frame.anchor:
                self.open_anchors.discard(frame.anchor)
                self.anchors[frame.anchor] = (frame.container, frame.size)
            self.add(frame.container, frame.size, event)
        elif isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise self.fail("holds more than one YAML document; a manifest is one",
                                "yaml.documents", event)

    def count(self, n: int, event: Any) -> None:
        self.nodes += n
        if self.nodes > self.limits.max_nodes:
            raise self.fail(f"expands to more than {self.limits.max_nodes:,} YAML nodes "
                            "(an alias counts as everything it repeats)", "limit.nodes", event)

    def add(self, value: Any, size: int, event: Any, raw: str | None = None) -> None:
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        top.size += size
        if isinstance(top.container, list):
            top.container.append(value)
        elif top.key is _PENDING:
            if isinstance(value, list | dict):
                raise self.fail("a mapping key must be a scalar", "yaml.key", event)
            if value in top.container:
                raise self.fail(f"duplicate key {value!r} (YAML 1.2 mapping keys are unique)",
                                "yaml.duplicate-key", event)
            top.key = value
        else:
            top.container[top.key] = value
            if len(self.stack) == 1 and top.key == "kcp_version" and raw is not None:
                self.version_raw = raw
            top.key = _PENDING

    def scalar(self, event: Any) -> Any:
        text: str = event.value
        if len(text) > self.limits.max_string:
            raise self.fail(f"a string of {len(text):,} characters is over the limit of "
                            f"{self.limits.max_string:,}", "limit.string", event)
        tag = event.tag
        if tag in (None, "!"):
            if tag is None and event.implicit[0]:
                return self.resolve(text, event)
            return text
        kind = _SCALAR_TAGS.get(tag)
        if kind is None:
            raise self.fail(self.tag_message(tag), "yaml.tag", event)
        if kind == "str":
            return text
        value = self.resolve(text, event)
        if kind == "float" and isinstance(value, YamlInt):
            value = _number(YamlFloat, float(value), text)
        wanted = {"int": YamlInt, "float": YamlFloat, "bool": bool, "null": type(None)}[kind]
        if type(value) is not wanted:
            raise self.fail(f"{text!r} is not a valid !!{kind}", "yaml.tag", event)
        return value

    def resolve(self, text: str, event: Any) -> Any:
        """The YAML 1.2 core schema's reading of a plain scalar."""
        if text in _NULLS:
            return None
        if text[0] not in _FIRST:
            return text
        if text in _TRUES:
            return True
        if text in _FALSES:
            return False
        numeric = (_INT, _OCT, _HEX, _FLOAT, _INF, _NAN)
        if len(text) > _MAX_NUMBER and any(p.fullmatch(text) for p in numeric):
            raise self.fail(f"a number literal of {len(text)} characters is over the limit "
                            f"of {_MAX_NUMBER}", "limit.string", event)
        if _INT.fullmatch(text):
            return _number(YamlInt, int(text, 10), text)
        if _OCT.fullmatch(text):
            return _number(YamlInt, int(text[2:], 8), text)
        if _HEX.fullmatch(text):
            return _number(YamlInt, int(text[2:], 16), text)
        if _FLOAT.fullmatch(text):
            return _number(YamlFloat, float(text), text)
        if _INF.fullmatch(text):
            return _number(YamlFloat, -math.inf if text.startswith("-") else math.inf, text)
        if _NAN.fullmatch(text):
            return _number(YamlFloat, math.nan, text)
        return text

    @staticmethod
    def tag_message(tag: str | None) -> str:
        return (f"tag {tag} is not allowed: manifests may use only the YAML core schema's "
                "str, int, float, bool, null, seq and map (KCP 12.2)")
