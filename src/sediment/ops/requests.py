"""The typed requests every adapter hands to the services: one definition of each field.

The CLI, the MCP tools (whose input schemas are these models' JSON schemas) and the HTTP
API build the same models, so a field's type, default and limits live here once. Models
are strict: a boolean is not a number, a string is not a number, names are exact (no case
folding or trimming), and an unknown field is an error. :func:`parse` turns pydantic's
report into one :class:`~sediment.errors.RequestError` that names each bad field and the
rule it breaks, the message every adapter shows.

Checks that need the store (does a source chunk exist, do the query vector's dimensions
match the layers, is the scope writable by this adapter) stay in the services.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self, TypeVar

import pydantic
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from sediment.errors import RequestError
from sediment.search import MAX_K
from sediment.search.fusion import DEFAULT_FUSION, FUSIONS
from sediment.store.rules import reserved_kind_problem as _reserved_kind_problem

__all__ = [
    "KIND_RE",
    "MAX_CHUNK_ID",
    "MAX_CONTENT_CHARS",
    "MAX_KINDS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_DIM",
    "MAX_SOURCES",
    "GetRequest",
    "KnowledgeRequest",
    "LayerField",
    "ProposeRequest",
    "RequestError",
    "SearchFilters",
    "SearchOptions",
    "SearchParams",
    "SourcesRequest",
    "StrictModel",
    "WriteRequest",
    "describe_errors",
    "parse",
]

MAX_QUERY_CHARS = 10_000
MAX_QUERY_DIM = 65_536
MAX_KINDS = 64
MAX_CONTENT_CHARS = 100_000
MAX_SOURCES = 64
MAX_CHUNK_ID = 2**32 - 1
KIND_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

LayerField = Literal["base", "user", "delta", "local"]
"""A layer name, exactly as written (``"LOCAL"`` and ``" delta "`` are not layer names)."""

_M = TypeVar("_M", bound=BaseModel)


class StrictModel(BaseModel):
    """No coercion, no unknown fields, immutable once built."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must be a non-empty string (not only whitespace)")
    return value


def _write_kind(value: str) -> str:
    if not KIND_RE.match(value):
        raise ValueError("use 1-64 letters, digits, '.', '_' or '-', starting with a letter "
                         "or digit (e.g. 'invariant', 'derived-summary')")
    problem = _reserved_kind_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _known_fusion(value: str) -> str:
    if value not in FUSIONS:
        raise ValueError(f"must be one of {', '.join(FUSIONS)}")
    return value


Text = Annotated[str, Field(min_length=1, json_schema_extra={"pattern": r"\S"}),
                 AfterValidator(_not_blank)]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
ChunkId = Annotated[int, Field(ge=1, le=MAX_CHUNK_ID)]


class SearchFilters(StrictModel):
    kind: list[Annotated[str, Field(min_length=1, max_length=256)]] | None = Field(
        default=None, min_length=1, max_length=MAX_KINDS,
        description="Only chunks of these kinds (at least one; omit to search every kind)")
    source: Annotated[Text, Field(max_length=4096)] | None = Field(
        default=None,
        description="Only chunks from this source: a configured source's name, or a path "
                    "prefix ending at a '/' (e.g. 'runbooks')")


class SearchParams(StrictModel):
    """A search as an agent or an HTTP client asks for it: text, vector, or both."""

    model_config = ConfigDict(**StrictModel.model_config, json_schema_extra={"anyOf": [
        {"required": ["query"], "properties": {"query": {"type": "string"}}},
        {"required": ["query_vec"], "properties": {"query_vec": {"type": "array"}}}]})

    query: Annotated[Text, Field(max_length=MAX_QUERY_CHARS)] | None = Field(
        default=None,
        description="What to look for (non-empty). Required unless query_vec is given.")
    k: int = Field(default=10, ge=1, le=MAX_K, description=f"Number of results, 1 to {MAX_K}.")
    filters: SearchFilters | None = Field(
        default=None, description='Filters, e.g. {"kind": ["invariant"]}')
    layers: list[LayerField] | None = Field(
        default=None, min_length=1, max_length=4,
        description="Layers to search (base, user, delta, local); default all four")
    query_vec: list[FiniteFloat] | None = Field(
        default=None, min_length=1, max_length=MAX_QUERY_DIM,
        description="A query embedding to use instead of (or with) embedding the query text")

    @model_validator(mode="after")
    def _has_a_query(self) -> Self:
        if self.query is None and self.query_vec is None:
            raise ValueError("give query (a non-empty string) or query_vec")
        return self

    @property
    def kinds(self) -> tuple[str, ...] | None:
        if self.filters is None or self.filters.kind is None:
            return None
        return tuple(self.filters.kind)

    @property
    def search_mode(self) -> Literal["hybrid", "vector", "lexical"]:
        return "hybrid" if self.query is not None else "vector"

    @property
    def needs_embedder(self) -> bool:
        """True when the query text must be embedded (no vector given, not lexical)."""
        return self.query_vec is None and self.search_mode != "lexical"


class SearchOptions(SearchParams):
    """:class:`SearchParams` with the tuning the CLI (and the HTTP API) offers."""

    mode: Literal["hybrid", "vector", "lexical"] = Field(
        default="hybrid", description="Retrievers to use; hybrid with only a vector is vector")
    metric: Literal["cosine", "dot"] = "cosine"
    fusion: Annotated[str, AfterValidator(_known_fusion)] = Field(
        default=DEFAULT_FUSION, json_schema_extra={"enum": list(FUSIONS)})
    rrf_k: FiniteFloat = Field(default=60.0, ge=1.0)
    vector_weight: FiniteFloat | None = Field(default=None, ge=0.0)
    lexical_weight: FiniteFloat | None = Field(default=None, ge=0.0)
    include_meta: bool = False
    exact: bool = False
    explain: bool = False
    mixed_schemas: bool = Field(
        default=False, description="Allow a lexical search over layers of different schemas "
                                   "(RFC 8.3 makes that an error by default)")

    @model_validator(mode="after")
    def _mode_fits(self) -> Self:
        if self.mode == "lexical" and self.query_vec is not None:
            raise ValueError("a query vector cannot drive a lexical search")
        if self.mode == "lexical" and self.query is None:
            raise ValueError("a lexical search needs query (a non-empty string)")
        return self

    @property
    def search_mode(self) -> Literal["hybrid", "vector", "lexical"]:
        return "vector" if self.mode == "hybrid" and self.query is None else self.mode


class WriteRequest(StrictModel):
    """One chunk an agent (or a person through ``sediment write``) appends (RFC 7.1, 11.1)."""

    content: Annotated[Text, Field(max_length=MAX_CONTENT_CHARS)] = Field(
        description="The knowledge to record (non-empty).")
    kind: Annotated[str, AfterValidator(_write_kind)] = Field(
        description="Kind, e.g. derived-summary, invariant, decision, note",
        json_schema_extra={"pattern": KIND_RE.pattern})
    confidence: FiniteFloat = Field(ge=0.0, le=1.0, description="Your confidence, 0.0 to 1.0.")
    sources: list[ChunkId | Annotated[str, Field(min_length=1, max_length=4096)]] | None = Field(
        default=None, max_length=MAX_SOURCES,
        description="Provenance: chunk ids or 'path:line' references")
    scope: LayerField = Field(
        default="local", description="'local' (ephemeral notes) or 'delta' (reviewable "
                                     "proposals)")


class ProposeRequest(StrictModel):
    context_id: ChunkId = Field(description="Id of a chunk in local or delta.")
    target: Literal["user"] = Field(default="user", description="Must be 'user' (RFC 11.2).")


class GetRequest(StrictModel):
    id: ChunkId = Field(description="A chunk id, e.g. from a search result.")


class SourcesRequest(StrictModel):
    """No arguments: every layer and document the caller may read."""


class KnowledgeRequest(StrictModel):
    query: Annotated[Text, Field(max_length=MAX_QUERY_CHARS)] = Field(
        description="What to look for (non-empty).")
    audience: Annotated[str, Field(min_length=1, max_length=256)] | None = Field(
        default=None, description="Only units for this audience, e.g. agent, developer")
    scope: Literal["global", "project", "module"] | None = Field(
        default=None, description="Only units of this scope: global, project or module")
    exclude_superseded: bool = Field(
        default=True, description="Leave out units another unit supersedes")
    k: int = Field(default=10, ge=1, le=100, description="Number of units, 1 to 100.")


def parse(model: type[_M], data: Mapping[str, Any]) -> _M:
    """Build ``model`` from untrusted ``data``, or raise one RequestError naming every bad
    field and its rule."""
    try:
        return model.model_validate(dict(data))
    except pydantic.ValidationError as exc:
        raise RequestError(describe_errors(exc)) from None


_EXPECTED = {
    "int_type": "an integer", "float_type": "a number", "string_type": "a string",
    "bool_type": "true or false", "list_type": "a list", "model_type": "an object",
    "dict_type": "an object", "model_attributes_type": "an object",
    "int_from_float": "an integer", "none_required": "null",
}
_TAG = re.compile(r"^(int|str|float|bool|none)$|[-\[]|^[A-Z]")
"""Union members in an error's location (``int``, ``constrained-str``, a model's name):
field names are identifiers, so these are never fields."""
MAX_REPORTED = 3


def _got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    if isinstance(value, int | float):
        return f"{value!r} (a number)"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:39] + "…"
        return f"{shown!r} (a string)"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _TAG.search(part):
            name = part if part.isidentifier() and len(part) <= 64 else repr(part[:64])
            out += f".{name}" if out else name
    return out or "request"


def _rule(err: Mapping[str, Any]) -> str:
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {_got(value)}"
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is not a known field"
    if kind == "literal_error":
        return f"must be exactly one of {ctx.get('expected')}, got {_got(value)}"
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        return f"must be at least {bound}, got {_got(value)}"
    if kind in ("less_than_equal", "less_than"):
        bound = ctx.get("le", ctx.get("lt"))
        return f"must be at most {bound} (the maximum), got {_got(value)}"
    if kind == "finite_number":
        return "must be a finite number"
    if kind in ("string_too_short", "too_short") and isinstance(value, str):
        return "must be a non-empty string"
    if kind in ("string_too_long", "too_long") and isinstance(value, str):
        return f"has {len(value)} characters; the maximum is {ctx.get('max_length')}"
    if kind == "too_short":
        return f"must list at least {ctx.get('min_length')} item(s), got none"
    if kind == "too_long":
        return (f"has {ctx.get('actual_length')} items; the maximum is "
                f"{ctx.get('max_length')}")
    if kind in ("value_error", "assertion_error"):
        return str(err["msg"]).split(", ", 1)[-1]
    return str(err["msg"])


def describe_errors(exc: pydantic.ValidationError) -> str:
    """One line: ``field: rule`` for each bad field (alternatives of a union merged)."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for err in exc.errors(include_url=False):
        grouped.setdefault(_where(tuple(err["loc"])), []).append(err)
    parts: list[str] = []
    for where, errs in grouped.items():
        expected = [_EXPECTED[e["type"]] for e in errs if e["type"] in _EXPECTED]
        if len(errs) > 1 and len(expected) == len(errs):
            either = " or ".join(dict.fromkeys(expected))
            rule = f"expected {either}, got {_got(errs[0].get('input'))}"
        else:
            specific = [e for e in errs if e["type"] not in _EXPECTED]
            rule = _rule(specific[0] if specific else errs[0])
        parts.append(rule if where == "request" else f"{where}: {rule}")
    more = len(parts) - MAX_REPORTED
    shown = "; ".join(parts[:MAX_REPORTED])
    return shown + (f"; and {more} more" if more > 0 else "")
