"""Bad input through the Python API (``sediment.open``) over layer files: a SedimentError
naming the field, never a TypeError or UnicodeEncodeError from inside, and nothing written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sediment
from sediment.format.model import check_unicode
from tests.cli.conftest import Runner

LONE = "a\ud800b"


@pytest.fixture
def project(sediment: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "README.md").write_text("# Demo\n\nDeploys run nightly from main.\n")
    r = sediment("compile", "--root", str(tmp_path), "--include", "*.md", "--out",
                 str(tmp_path / "AGENTS.db"), "--embedder", "hash")
    assert r.code == 0, r.err
    monkeypatch.setenv("SEDIMENT_DATA_DIR", str(tmp_path / "data"))
    return tmp_path


LONE_SURROGATE_CALLS: dict[str, tuple[str, Callable[[Any], object]]] = {
    "forget-reason": ("reason", lambda s: s.forget(
        s.write("A note.", kind="note", confidence=0.5), reason=LONE)),
    "save-content": ("content", lambda s: s.save_memory(LONE, "fact")),
    "save-context": ("context", lambda s: s.save_memory("Deploys are nightly", "fact",
                                                        context=LONE)),
    "save-related": ("related_to", lambda s: s.save_memory("Deploys are nightly", "fact",
                                                           related_to=[f"{LONE}:1"])),
    "context-content": ("content", lambda s: s.store_context(LONE, "task")),
    "context-tags": ("tags", lambda s: s.store_context("A task.", "task", tags=[LONE])),
    "context-metadata": ("metadata", lambda s: s.store_context("A task.", "task",
                                                               metadata={"k": LONE})),
}


@pytest.mark.parametrize("call", sorted(LONE_SURROGATE_CALLS))
def test_a_lone_surrogate_is_a_validation_error_naming_the_field(project: Path,
                                                                  call: str) -> None:
    """``"\\ud800"`` (which JSON and Python strings can carry) reached the layer writer
    and failed there with UnicodeEncodeError."""
    field, run = LONE_SURROGATE_CALLS[call]
    with sediment.open(project, embedder="hash") as store, \
            pytest.raises(sediment.ValidationError, match=f"{field}.*not valid Unicode"):
        run(store)


@given(st.text(alphabet=st.characters(codec=None), max_size=20))
def test_check_unicode_refuses_exactly_what_utf8_cannot_hold(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        with pytest.raises(sediment.ValidationError, match="where"):
            check_unicode(text, "where")
    else:
        assert check_unicode(text, "where") == text


@pytest.mark.parametrize(("argument", "wrong"), [
    ("query", None), ("query", 3), ("query", {"q": 1}), ("query", " "),
    ("max_items", 1.5), ("max_items", "3"), ("max_items", -1), ("max_items", True),
    ("max_tokens", "400"), ("max_tokens", [1]), ("max_tokens", -5),
    ("context_types", "task"), ("context_types", ["nope"]), ("context_types", [1]),
    ("min_score", float("nan")), ("min_score", 2), ("min_score", "0.3"),
    ("run_id", 7), ("run_id", b"run"), ("include_archived", "yes"),
    ("skills_across_runs", 1),
])
def test_a_wrong_argument_of_relevant_context_is_named(project: Path, argument: str,
                                                       wrong: object) -> None:
    """``relevant_context(None)`` was a TypeError from slicing the query, a float
    ``max_items`` one from slicing the items; the MCP tool's request model refused them."""
    with sediment.open(project, embedder="hash") as store:
        store.store_context("Deploys run nightly from main.", "task")
        args: dict[str, Any] = {"query": "deploys", argument: wrong}
        with pytest.raises(sediment.ValidationError, match=argument):
            store.relevant_context(**args)
        assert store.relevant_context("deploys")["items"]


@pytest.mark.parametrize(("location", "error", "message"), [
    (None, sediment.ValidationError, "location must be"),
    (5, sediment.ValidationError, "got int"),
    (b"/tmp", sediment.ValidationError, "got bytes"),
    ("", sediment.ValidationError, "location is empty"),
    ("README.md", sediment.NotFoundError, "a file, not a directory"),
])
def test_sediment_open_names_a_wrong_location(project: Path, monkeypatch: pytest.MonkeyPatch,
                                              location: object, error: type[Exception],
                                              message: str) -> None:
    """None, 5 and bytes were TypeErrors from os.fspath; "" opened the working directory."""
    monkeypatch.chdir(project)
    with pytest.raises(error, match=message):
        sediment.open(location)  # type: ignore[arg-type]


@pytest.mark.parametrize(("option", "wrong"), [
    ("embedder", 5), ("embedder", ["hash"]), ("cache_path", 5), ("actor", ""),
])
def test_sediment_open_names_a_wrong_option(project: Path, option: str,
                                            wrong: object) -> None:
    """A wrong embedder was ignored (the layers' embedder was taken), a wrong cache_path a
    TypeError, an empty actor read as the OS user."""
    with pytest.raises(sediment.ValidationError, match=option):
        sediment.open(project, **{option: wrong})


def test_an_upper_case_scheme_is_a_postgresql_url(project: Path) -> None:
    """URL schemes are case-insensitive: ``POSTGRESQL://`` was taken for a directory."""
    with pytest.raises(sediment.SedimentError, match=r"postgresql://nohost\.invalid"):
        sediment.open("POSTGRESQL://nohost.invalid/db")


def test_a_deeply_nested_origin_is_a_validation_error(project: Path) -> None:
    """json.dumps raised RecursionError (an HTTP body is cut at 64 levels before, a
    program's object or an imported file's front matter is not)."""
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(100_000):
        inner["a"] = {}
        inner = inner["a"]
    with sediment.open(project, embedder="hash") as store, \
            pytest.raises(sediment.ValidationError, match="origin nests"):
        store.save_memory("Deploys are nightly.", "fact", origin=deep)


@pytest.mark.parametrize("run_id", ["bad run!", "r\n", "x" * 101, "", 7, LONE])
def test_a_run_id_the_mcp_tools_refuse_is_refused_everywhere(project: Path,
                                                             run_id: object) -> None:
    """The command line and the Python API stored items under run ids (``"bad run!"``)
    that no MCP tool accepts, so an agent could never name that run."""
    with sediment.open(project, embedder="hash") as store:
        loop, actor = store.context, store.actor
        for call in (lambda: store.store_context("A task.", "task", run_id=run_id),
                     lambda: store.relevant_context("task", run_id=run_id),
                     lambda: loop.get_iteration_history(actor, run_id=run_id),
                     lambda: loop.summarize_old_context(actor, run_id=run_id),
                     lambda: loop.store_iteration_result(actor, 1, "ok", True,
                                                         run_id=run_id)):
            with pytest.raises(sediment.ValidationError, match="run_id"):
                call()


@pytest.mark.parametrize(("call", "wrong"), [
    ("history", "5"), ("history", 0), ("history", 2.5), ("summarize", "3"), ("summarize", 0),
])
def test_a_wrong_count_of_the_context_loop_is_named(project: Path, call: str,
                                                    wrong: object) -> None:
    """``get_iteration_history(last_n="5")`` was a TypeError from slicing."""
    with sediment.open(project, embedder="hash") as store:
        loop, actor = store.context, store.actor
        with pytest.raises(sediment.ValidationError):
            if call == "history":
                loop.get_iteration_history(actor, last_n=wrong)  # type: ignore[arg-type]
            else:
                loop.summarize_old_context(actor, older_than_iterations=wrong)  # type: ignore[arg-type]


@pytest.mark.parametrize(("options", "field"), [
    ({"content": "word " * 10_001}, "content"),
    ({"tags": ["t"] * 51}, "tags"),
    ({"tags": ["t" * 101]}, r"tags\[0\]"),
])
def test_store_context_keeps_the_mcp_tools_limits(project: Path, options: dict[str, Any],
                                                  field: str) -> None:
    """The MCP tool refused a 50,001-character item or 51 tags; the command line and the
    Python API stored them (and a later get_relevant_context handed them to agents)."""
    args: dict[str, Any] = {"content": "A task.", "context_type": "task", **options}
    with sediment.open(project, embedder="hash") as store, \
            pytest.raises(sediment.ValidationError, match=field):
        store.store_context(**args)
