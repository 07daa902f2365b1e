"""The ``[context]`` settings: retrieval, lifecycle, scoring and storage limits, with the
seed's presets (minimal / standard / aggressive).

Values come, lowest first, from the built-in ``standard`` preset, the preset a file names,
then each key a file sets; :func:`resolve` records where each effective value came from so
``sediment context config`` can print it. The caller (an adapter) hands in the raw keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from sediment.errors import ConfigError

CONTEXT_TYPES = ("task", "iteration", "skill", "file", "output", "error")
PERSISTENCE = ("session", "project", "global")


@dataclass(frozen=True, slots=True)
class ContextSettings:
    persistence: str = "project"
    path: str = ""
    """Where the context store lives; empty: ``<layer dir>/.sediment/context``."""
    max_size_mb: int = 500
    max_items_per_query: int = 10
    min_relevance_score: float = 0.3
    context_types: tuple[str, ...] = ("skill", "error", "iteration")
    max_context_tokens: int = 4000
    active_iterations: int = 5
    summarize_after_iterations: int = 20
    archive_after_iterations: int = 50
    prune_after_iterations: int = 100
    prune_min_usefulness: float = 0.3
    semantic_weight: float = 0.40
    recency_weight: float = 0.25
    usefulness_weight: float = 0.20
    type_match_weight: float = 0.15
    recency_decay: float = 0.1
    skill_recency_decay: float = 0.05
    feedback_reach: int = 1
    """Items marked helpful join the ranked set from the hybrid search's best
    ``feedback_reach x max_items`` (1: feedback only reorders; see ``ranking``)."""
    feedback_similarity: float = 0.8
    """A vote given for a query counts for a later query whose embedding cosine with it
    reaches this (a part growing with the cosine); see ``ranking.query_weight``."""
    feedback_gain: float = 0.6
    """How far such a vote lifts an item into the set the factors rank: its selection
    key is semantic + feedback_gain x the weighted votes (``ranking.select``)."""
    feedback_half_life: int = 3
    """A vote counts half after this many iterations of its item's run, a quarter after
    twice as many (0: never fades); see ``ranking.vote_decay``."""
    feedback_lift_iterations: int = 0
    """A helpful vote lifts its item into the ranked set (``feedback_gain``) only while it
    is at most this many iterations old (0: in the iteration it was given in); after that
    it only orders the set, through the usefulness factor. A loop asks with its task
    every iteration, and lifting what helped earlier took the places of the items the
    search ranks first for it (issue 27)."""
    skills_across_runs: bool = True
    """With a ``run_id``, skills of the actor's other runs are returned too (skills are
    learned strategies that outlive a loop); false: only the run's own skills. A
    ``get_relevant_context`` argument overrides it per call."""


PRESETS: dict[str, dict[str, Any]] = {
    "minimal": {"persistence": "session", "max_size_mb": 100, "max_items_per_query": 5,
                "summarize_after_iterations": 10},
    "standard": {"persistence": "project", "max_size_mb": 500, "max_items_per_query": 10,
                 "summarize_after_iterations": 20},
    "aggressive": {"persistence": "global", "max_size_mb": 2000, "max_items_per_query": 25,
                   "summarize_after_iterations": 50, "archive_after_iterations": 100},
}
"""The seed's preset table (aggressive also archives later, at 100, since it summarises
at 50). Its ``embeddings`` row (openai for aggressive) is not taken:
the embedder is the project's own ``[embedder]`` section, offline by default."""

KEYS = frozenset({"preset", *(f.name for f in fields(ContextSettings))})


def _check(name: str, value: Any, where: str) -> Any:
    default = getattr(ContextSettings(), name)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: context.{name} must be true or false")
        return value
    if isinstance(default, tuple):
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: context.{name} must be a list of strings")
        bad = [v for v in value if v not in CONTEXT_TYPES]
        if bad:
            raise ConfigError(f"{where}: context.{name} has unknown type(s) {', '.join(bad)}; "
                              f"known: {', '.join(CONTEXT_TYPES)}")
        return tuple(value)
    if isinstance(value, bool):
        raise ConfigError(f"{where}: context.{name} must be a number, got a boolean")
    if isinstance(default, float):
        if not isinstance(value, int | float):
            raise ConfigError(f"{where}: context.{name} must be a number")
        if not 0.0 <= float(value) <= 1.0 and not name.endswith("decay"):
            raise ConfigError(f"{where}: context.{name} must be between 0 and 1, got {value}")
        if float(value) < 0:
            raise ConfigError(f"{where}: context.{name} must not be negative")
        return float(value)
    if isinstance(default, int):
        if not isinstance(value, int) or value < 0:
            raise ConfigError(f"{where}: context.{name} must be a non-negative integer")
        return value
    if not isinstance(value, str):
        raise ConfigError(f"{where}: context.{name} must be a string")
    if name == "persistence" and value not in PERSISTENCE:
        raise ConfigError(f"{where}: context.persistence must be one of "
                          f"{', '.join(PERSISTENCE)}, got {value!r}")
    return value


def resolve(layers: Sequence[tuple[str, Mapping[str, Any]]]
            ) -> tuple[ContextSettings, dict[str, str]]:
    """Settings from ``(source, raw [context] table)`` pairs, lowest precedence first;
    returns them with each key's origin (``default``, ``preset <name> (<source>)`` or the
    source)."""
    values: dict[str, Any] = {}
    origin = {f.name: "default (standard)" for f in fields(ContextSettings)}
    for source, raw in layers:
        unknown = set(raw) - KEYS
        if unknown:
            raise ConfigError(f"{source}: unknown key(s) {', '.join(sorted(unknown))} in "
                              f"[context]; known: {', '.join(sorted(KEYS))}")
        if "preset" in raw:
            name = raw["preset"]
            if name not in PRESETS:
                raise ConfigError(f"{source}: context.preset must be one of "
                                  f"{', '.join(PRESETS)}, got {name!r}")
            for key, value in PRESETS[name].items():
                values[key] = value
                origin[key] = f"preset {name} ({source})"
        for key, value in raw.items():
            if key != "preset":
                values[key] = _check(key, value, source)
                origin[key] = source
    settings = replace(ContextSettings(), **values)
    if not (settings.active_iterations < settings.summarize_after_iterations
            < settings.archive_after_iterations):
        raise ConfigError("[context]: need active_iterations < summarize_after_iterations < "
                          "archive_after_iterations")
    return settings, origin
