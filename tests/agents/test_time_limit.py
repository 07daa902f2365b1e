"""A Lua persona's time limit is hard: it stops work inside a C function, covers its
context calls and the wait for a worker, and a stopped worker never blocks the next one."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from sediment.agents import LuaPersona
from sediment.agents.workers import WorkerPool
from sediment.embed import HashEmbedder
from sediment.errors import AgentError, AgentTimeoutError
from sediment.ops.service import ContextService
from sediment.server.prompts import ServiceContext
from sediment.store import LayerSet
from tests.mcp.conftest import make_store

pytestmark = pytest.mark.timeout(120)

TOOLS = frozenset({"agents_search"})
SLACK = 3.0
"""Seconds past the limit a stopped resolution may take to return (a loaded machine)."""
PATHOLOGICAL = "string.find(string.rep('a', 200), string.rep('a*', 20) .. 'b')"
"""Backtracks for about 200^20 steps inside one call to a C function."""


@pytest.fixture
def pool() -> Iterator[WorkerPool]:
    p = WorkerPool(1)
    yield p
    p.close()


@pytest.fixture
def context(tmp_path: Path) -> ServiceContext:
    store = make_store(tmp_path / "store")
    return ServiceContext(ContextService(LayerSet.from_directory(store), HashEmbedder()))


def persona(tmp_path: Path, pool: WorkerPool, body: str, *, timeout: float,
            top: str = "", name: str = "probe") -> LuaPersona:
    script = tmp_path / f"{name}.lua"
    script.write_text(f"{top}\nlocal agent = {{ description = 'probe' }}\n"
                      f"function agent.resolve(args, config, context)\n{body}\nend\n"
                      "return agent\n")
    return LuaPersona(name, script, config={}, allowed=TOOLS, aliases={}, timeout=timeout,
                      pool=pool)


class SlowContext:
    """A store that answers each search after ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.searches = 0

    def search(self, opts: Mapping[str, Any]) -> list[dict[str, Any]]:
        self.searches += 1
        time.sleep(self.delay)
        return []

    def get(self, chunk_id: int) -> dict[str, Any] | None:
        return None

    def sources(self) -> list[dict[str, Any]]:
        return []


def timed(fn: Any) -> tuple[BaseException | None, float]:
    started = time.monotonic()
    try:
        fn()
    except BaseException as exc:
        return exc, time.monotonic() - started
    return None, time.monotonic() - started


def test_a_pathological_pattern_is_stopped_at_the_limit(tmp_path: Path, pool: WorkerPool,
                                                        context: ServiceContext) -> None:
    p = persona(tmp_path, pool, f"{PATHOLOGICAL}\nreturn {{ system = 'finished' }}",
                timeout=1.0)
    err, took = timed(lambda: p.resolve({}, context))
    assert isinstance(err, AgentTimeoutError), err
    assert str(err) == "persona probe: the script ran past its time limit of 1s"
    assert 1.0 <= took < 1.0 + SLACK
    ok = persona(tmp_path, pool, "return { system = 'next' }", timeout=5.0, name="ok")
    assert ok.resolve({}, context).system == "next"
    assert pool.count() == 1


def test_pcall_cannot_outlast_a_pathological_pattern(tmp_path: Path, pool: WorkerPool,
                                                     context: ServiceContext) -> None:
    p = persona(tmp_path, pool, f"while true do pcall(function() {PATHOLOGICAL} end) end",
                timeout=1.0)
    err, took = timed(lambda: p.resolve({}, context))
    assert isinstance(err, AgentTimeoutError) and took < 1.0 + SLACK


def test_a_pathological_pattern_at_load_time_is_stopped(tmp_path: Path,
                                                        pool: WorkerPool) -> None:
    err, took = timed(lambda: persona(tmp_path, pool, "return { system = 'x' }",
                                      timeout=1.0, top=PATHOLOGICAL))
    assert isinstance(err, AgentTimeoutError) and took < 1.0 + SLACK


def test_the_limit_covers_context_calls(tmp_path: Path, pool: WorkerPool) -> None:
    slow = SlowContext(0.2)
    p = persona(tmp_path, pool, "for i = 1, 1000 do context.search({ query = 'x' }) end\n"
                                "return { system = 'all done' }", timeout=1.0)
    err, took = timed(lambda: p.resolve({}, slow))
    assert isinstance(err, AgentTimeoutError), err
    assert took < 1.0 + SLACK and slow.searches <= 8


def test_the_limit_covers_one_long_context_call(tmp_path: Path, pool: WorkerPool) -> None:
    p = persona(tmp_path, pool, "context.search({ query = 'x' })\nreturn { system = 'x' }",
                timeout=1.0)
    err, took = timed(lambda: p.resolve({}, SlowContext(30.0)))
    assert isinstance(err, AgentTimeoutError) and took < 1.0 + SLACK


def test_waiting_for_a_busy_worker_counts_against_the_limit(
        tmp_path: Path, pool: WorkerPool, context: ServiceContext) -> None:
    hog = persona(tmp_path, pool, PATHOLOGICAL, timeout=6.0, name="hog")
    quick = persona(tmp_path, pool, "return { system = 'x' }", timeout=0.5, name="quick")
    errors: list[BaseException | None] = []
    t = threading.Thread(target=lambda: errors.append(timed(lambda: hog.resolve({},
                                                                               context))[0]))
    t.start()
    time.sleep(0.5)
    err, took = timed(lambda: quick.resolve({}, context))
    assert isinstance(err, AgentTimeoutError), err
    assert "(all 1 Lua persona workers were busy)" in str(err) and took < 0.5 + SLACK
    t.join(30)
    assert isinstance(errors[0], AgentTimeoutError)


def test_closing_the_pool_ends_work_in_flight_at_once(tmp_path: Path, pool: WorkerPool,
                                                      context: ServiceContext) -> None:
    p = persona(tmp_path, pool, PATHOLOGICAL, timeout=120.0)
    errors: list[tuple[BaseException | None, float]] = []
    t = threading.Thread(target=lambda: errors.append(timed(lambda: p.resolve({}, context))))
    t.start()
    time.sleep(1.0)
    pool.close()
    t.join(30)
    err, took = errors[0]
    assert isinstance(err, AgentError) and "the server is shutting down" in str(err)
    assert took < 1.0 + SLACK
    assert pool.count() == 0
    with pytest.raises(AgentError, match="shutting down"):
        p.resolve({}, context)


def test_config_values_json_lacks_reach_the_script_as_text(tmp_path: Path, pool: WorkerPool,
                                                          context: ServiceContext) -> None:
    import datetime

    script = tmp_path / "dated.lua"
    script.write_text("return { resolve = function(args, config)\n"
                      "  return { system = type(config.since) .. ' ' .. config.since } end }\n")
    p = LuaPersona("dated", script, config={"since": datetime.date(2026, 11, 27)},
                   allowed=TOOLS, aliases={}, timeout=5.0, pool=pool)
    assert p.resolve({}, context).system == "string 2026-11-27"
