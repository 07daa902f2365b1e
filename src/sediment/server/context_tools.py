"""MCP tools for agent loops (issue 17, docs/context.md): ``get_relevant_context``,
``get_iteration_history``, ``get_skills``, ``store_context``, ``store_iteration_result``,
``mark_useful``, ``summarize_old_context``, ``prune_low_value_context``,
``get_context_stats`` and ``health_check``.

Arguments are validated strictly by the request models below (no coercion, no unknown
arguments, the seed's limits): a bad call is an ``isError`` result naming the field. The
actor is the one bound to the HTTP request's bearer token, else the server's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from sediment.auth import Principal
from sediment.context import ContextLoop
from sediment.context.service import MAX_CONTENT_CHARS, MAX_TAG_CHARS, MAX_TAGS
from sediment.context.state import RUN_ID_PATTERN
from sediment.server.context_outputs import (
    HealthOut,
    HistoryOut,
    IterationOut,
    MarkOut,
    PruneOut,
    RelevantOut,
    SkillsOut,
    StatsOut,
    StoreOut,
    SummarizeOut,
)
from sediment.server.tools import APPEND_ONLY, READ_ONLY, actor_tool, result

ContextType = Literal["task", "iteration", "skill", "file", "output", "error"]
Score = Annotated[float, Field(ge=0.0, le=1.0)]
RunId = Annotated[str, StringConstraints(min_length=1, max_length=100,
                                         pattern=RUN_ID_PATTERN)]
Tag = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TAG_CHARS)]
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True,
                              idempotent_hint=False, open_world_hint=False)


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class RelevantRequest(_Strict):
    query: str = Field(min_length=1, max_length=10_000, description=(
        "The task or question; the first 500 characters are used"))
    max_items: int = Field(default=10, ge=1, le=50, description="1 to 50")
    context_types: list[ContextType] | None = Field(default=None, max_length=6, description=(
        "Prefer these types: task, iteration, skill, file, output, error"))
    min_score: Score = Field(default=0.3, description="Minimum relevance, 0 to 1")
    max_tokens: int | None = Field(default=None, ge=16, le=200_000, description=(
        "Also return a Markdown block of at most this many tokens"))
    run_id: RunId | None = Field(default=None, description=(
        "Only this loop's items, plus the actor's skills of every run unless "
        "skills_across_runs is false"))
    include_archived: bool = Field(default=False, description="Search the archive too")
    skills_across_runs: bool | None = Field(default=None, description=(
        "With run_id: also return skills stored in the actor's other runs (true) or only "
        "this run's (false); default: the [context] skills_across_runs setting (true)"))


class HistoryRequest(_Strict):
    last_n: int = Field(default=5, ge=1, le=100)
    run_id: RunId = "default"


class SkillsRequest(_Strict):
    tags: list[Tag] | None = Field(default=None, max_length=50)
    min_score: Score = Field(default=0.5, description="Minimum usefulness, 0 to 1")


class StoreRequest(_Strict):
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    context_type: ContextType
    tags: list[Tag] | None = Field(default=None, max_length=MAX_TAGS)
    metadata: dict[str, Any] | None = None
    run_id: RunId = "default"


class IterationRequest(_Strict):
    iteration: int = Field(ge=0, le=10_000_000)
    summary: str = Field(min_length=1, max_length=20_000)
    success: bool
    duration_ms: int = Field(default=0, ge=0)
    tokens_used: int = Field(default=0, ge=0)
    cost: float = Field(default=0.0, ge=0.0)
    tool_calls: list[Annotated[str, StringConstraints(max_length=200)]] | None = Field(
        default=None, max_length=1000)
    artifacts: list[Annotated[str, StringConstraints(max_length=1000)]] | None = Field(
        default=None, max_length=1000)
    error: str | None = Field(default=None, max_length=20_000)
    run_id: RunId = "default"


class MarkRequest(_Strict):
    item_id: str = Field(min_length=1, max_length=20, description="An item id, like c12")
    helpful: bool
    reason: str | None = Field(default=None, max_length=2000)
    query: str | None = Field(default=None, max_length=10_000, description=(
        "The request the item helped with (first 500 characters); default: the query of "
        "the last get_relevant_context that returned it. The vote counts for similar "
        "queries only, and fades with the run's iterations."))


class SummarizeRequest(_Strict):
    older_than_iterations: int = Field(default=20, ge=1, le=1_000_000)
    run_id: RunId | None = None


class PruneRequest(_Strict):
    min_score: Score = Field(default=0.3, description="Forget items under this usefulness")


class NoArgs(_Strict):
    pass


def _render(items: list[dict[str, Any]]) -> str:
    return "\n".join(f"{i}. [{d['id']} {d['type']}, {d['state']}, score "
                     f"{d.get('score', d.get('usefulness', 0)):.3f}] {d['content']}"
                     for i, d in enumerate(items, 1)) or "No context items."


OUTPUTS: dict[str, type[BaseModel]] = {
    "get_relevant_context": RelevantOut,
    "get_iteration_history": HistoryOut,
    "get_skills": SkillsOut,
    "store_context": StoreOut,
    "store_iteration_result": IterationOut,
    "mark_useful": MarkOut,
    "summarize_old_context": SummarizeOut,
    "prune_low_value_context": PruneOut,
    "get_context_stats": StatsOut,
    "health_check": HealthOut,
}
"""Each context tool's output schema."""


def _relevant_text(out: dict[str, Any]) -> str:
    text = out["block"] if "block" in out else _render(out["items"])
    if out["warnings"]:
        text = "Warnings: " + "; ".join(out["warnings"]) + "\n" + text
    return text


def _pruned_text(out: dict[str, Any]) -> str:
    return "\n".join([f"Removed {out['count']} items.",
                      *(f"- {d['id']} {d['type']} ({d['reason']})" for d in out["removed"])])


Text = Callable[[dict[str, Any]], str]
SPECS: list[tuple[str, type[BaseModel], str, Text, ToolAnnotations, str]] = [
    ("get_relevant_context", RelevantRequest, "get_relevant_context", _relevant_text,
     READ_ONLY,
     """Get the few items from earlier iterations that matter for this task, best first
     (0.40 semantic + 0.25 recency + 0.20 usefulness + 0.15 type match; each result
     explains its factors). With max_tokens, also a Markdown block to inject."""),
    ("get_iteration_history", HistoryRequest, "get_iteration_history",
     lambda out: _render(out["iterations"]), READ_ONLY,
     "The last iterations of a loop (run_id): what was tried, what succeeded or failed."),
    ("get_skills", SkillsRequest, "get_skills", lambda out: _render(out["skills"]), READ_ONLY,
     """Learned skills, most useful first; min_score is the skill's usefulness from
     feedback (0.5 until marked)."""),
    ("store_context", StoreRequest, "store_context",
     lambda out: f"Stored {out['id']} ({out['context_type']}, iteration {out['iteration']} "
                 f"of run {out['run_id']}).", APPEND_ONLY,
     """Store context for later iterations: task, iteration, skill, file, output or
     error. Never include secrets: content that looks like a credential is refused."""),
    ("store_iteration_result", IterationRequest, "store_iteration_result",
     lambda out: f"Stored iteration {out['iteration']} as {out['id']}.", APPEND_ONLY,
     """Record the result of a finished iteration (its error, if any, becomes an error
     item too). Call it after every iteration of the loop."""),
    ("mark_useful", MarkRequest, "mark_useful",
     lambda out: f"Recorded: {out['id']} {'helpful' if out['helpful'] else 'not helpful'} "
                 f"(usefulness now {out['usefulness']:.2f}).", APPEND_ONLY,
     """Say whether a returned item helped (+0.1 usefulness) or not (-0.15). A vote
     counts for queries like the one it names, fades over the run's next iterations
     (half after feedback_half_life, 3), and an item's helpful votes count at most
     one: mark what helped this iteration, re-marking adds nothing."""),
    ("summarize_old_context", SummarizeRequest, "summarize_old_context",
     lambda out: f"Summarized {out['summarized']} items into {len(out['summaries'])} "
                 f"summaries; archived {out['archived']}; pruned {len(out['pruned'])}.",
     APPEND_ONLY,
     """Replace items older than older_than_iterations by extractive summaries (the
     originals are superseded, not deleted) and archive items past the archive age."""),
    ("prune_low_value_context", PruneRequest, "prune", _pruned_text, DESTRUCTIVE,
     """Forget items whose usefulness is under min_score, and items older than
     [context] prune_after_iterations never marked helpful (never a skill marked
     helpful); says what it removed."""),
    ("get_context_stats", NoArgs, "stats",
     lambda out: f"{out['total']} items: {out['by_state']}; types {out['by_type']}.",
     READ_ONLY,
     "Counts of stored context by type and lifecycle state, feedback, runs and size."),
    ("health_check", NoArgs, "health", lambda out: f"{out['status']}: {out['checks']}",
     READ_ONLY, "Whether the context store, the embedder and the tokenizer work."),
]
"""Each tool: its request, the service method its arguments (by name) go to, after the
caller's actor, and the text of its answer."""


def context_loop_tools(cl: ContextLoop, actor: str) -> list[Tool]:
    """The ten context tools over ``cl``, for :func:`sediment.server.build_server` to
    construct the server with (the SDK takes built tools only then). ``actor`` is whom a
    call without a bearer token acts as (the server's own)."""

    def handler(method: str, text: Text) -> Callable[[BaseModel, Principal], CallToolResult]:
        def call(r: BaseModel, p: Principal) -> CallToolResult:
            run = getattr(cl, method)
            out = run() if method == "health" else run(p.actor, **dict(r))
            return result(out, text(out))
        return call

    return [actor_tool(name, model, handler(method, text), output=OUTPUTS[name],
                       description=description, annotations=notes, actor=actor)
            for name, model, method, text, notes, description in SPECS]
