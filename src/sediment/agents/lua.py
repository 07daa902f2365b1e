"""Lua personas, run in a sandbox (lupa, Lua 5.4).

Each load and each resolution gets a fresh ``LuaRuntime``: no state survives between calls.
The runtime is built with ``register_eval=False`` and ``register_builtins=False``, an
``attribute_filter`` that refuses every Python attribute access, and lupa's ``max_memory``.
The script is loaded as text (never bytecode) into a clean environment table holding only
pure functions (``string`` without ``dump``, ``table``, ``math`` without ``random``,
``utf8``, ``pairs``, ``ipairs``, ``select``, ``type``, ``tostring``, ``tonumber``,
``next``, ``error``, ``assert``, ``rawequal``, ``rawlen``, ``pcall``, ``xpcall``) and the
``context`` table: ``context.search(opts)``, ``context.get(id)``, ``context.sources()``
(the same services as the ``agents_search``, ``agents_get`` and ``agents_sources`` tools).
Absent: ``os``, ``io``, ``load``, ``loadstring``, ``dofile``, ``loadfile``, ``require``,
``debug``, ``package``, ``collectgarbage``, ``coroutine``, ``getmetatable``,
``setmetatable``, ``rawget``, ``rawset``, ``print``. ``string.dump`` is removed from the
runtime's shared string table too, since every string reaches it through its metatable.

Every load and resolution runs in a worker process (:mod:`sediment.agents.workers`) that
is killed once the persona's ``timeout`` has passed, counting everything the resolution
does: waiting for a worker, the script, its ``context`` calls. Inside the worker a count
hook runs every :data:`HOOK_EVERY` VM instructions and raises a little before that
deadline, so an ordinary endless loop ends without losing the worker. The ``pcall`` and
``xpcall`` the script sees re-raise that error (and out-of-memory), so a script cannot
catch its way past either. Only the kill stops a single long call into a Lua C function
(a pathological ``string.find`` pattern).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import lupa.lua54 as lupa

from sediment.agents.model import (
    PersonaContext,
    Resolved,
    check_arguments,
    info_from,
    prompt_from,
)
from sediment.agents.workers import WorkerPool, default_pool
from sediment.errors import AgentError, AgentTimeoutError, ConfigError

__all__ = ["DEFAULT_MEMORY", "DEFAULT_TIMEOUT", "LuaPersona"]

DEFAULT_TIMEOUT = 30.0
DEFAULT_MEMORY = 64 * 1024 * 1024
HOOK_EVERY = 10_000
MAX_SCRIPT_BYTES = 1_000_000
MAX_DEPTH = 32
MAX_ITEMS = 100_000
MAX_CALLS = 1_000
"""Context calls (searches, gets, sources) one resolution may make."""

_SANDBOX = """
local timeout, now, fail_memory = ...
local started = now()
local TIMEOUT = "sediment: the persona ran past its time limit"
local state = { timed_out = false }
debug.sethook(function()
  if state.timed_out or now() - started > timeout then
    state.timed_out = true
    error(TIMEOUT, 0)
  end
end, "", %d)
string.dump = nil
local function fatal(e)
  return state.timed_out or e == "not enough memory"
end
local function pass(ok, ...)
  if not ok and fatal((...)) then error((...), 0) end
  return ok, ...
end
local env = {
  string = {}, table = {}, math = {}, utf8 = {},
  pairs = pairs, ipairs = ipairs, select = select, type = type, tostring = tostring,
  tonumber = tonumber, next = next, error = error, assert = assert, rawequal = rawequal,
  rawlen = rawlen,
  pcall = function(f, ...) return pass(pcall(f, ...)) end,
  xpcall = function(f, h, ...)
    return pass(xpcall(f, function(e) if fatal(e) then return e end return h(e) end, ...))
  end,
}
for _, lib in ipairs({"string", "table", "math", "utf8"}) do
  for k, v in pairs(_G[lib]) do env[lib][k] = v end
end
env.math.random, env.math.randomseed = nil, nil
env._G = env
return env, state
"""


def _refuse(_obj: Any, name: Any, _setting: bool) -> str:
    raise AttributeError(f"access to Python attributes is not allowed ({str(name)[:40]})")


class _Run:
    """One fresh runtime: the sandbox environment, the context bridge, conversions."""

    def __init__(self, name: str, timeout: float, memory: int, *,
                 limit: float | None = None) -> None:
        self.name = name
        self.timeout = timeout
        self.limit = timeout if limit is None else limit
        self.calls: dict[str, int] = {"searches": 0, "gets": 0, "sources": 0}
        self.lua = lupa.LuaRuntime(register_eval=False, register_builtins=False,
                                   attribute_filter=_refuse, unpack_returned_tuples=False,
                                   max_memory=memory)
        setup = self.lua.execute(_SANDBOX % HOOK_EVERY, timeout, time.monotonic)
        self.env, self.state = setup

    def timed_out(self) -> bool:
        return bool(self.state["timed_out"])

    def guard(self, fn: Callable[[], Any]) -> Any:
        """Run Lua code, mapping every failure (the script's, or a context call's) to an
        AgentError naming the persona (AgentTimeoutError past the time limit)."""
        try:
            return fn()
        except AgentError:
            raise
        except lupa.LuaMemoryError:
            raise AgentError(f"persona {self.name}: the script ran out of memory") from None
        except Exception as exc:
            if self.timed_out():
                raise AgentTimeoutError(f"persona {self.name}: the script ran past its time "
                                        f"limit of {self.limit:g}s") from None
            lines = str(exc).strip().splitlines()
            message = lines[0] if lines else type(exc).__name__
            if "not enough memory" in message:
                raise AgentError(f"persona {self.name}: the script ran out of memory") from None
            raise AgentError(f"persona {self.name}: the script failed: {message[:500]}") from None

    def load(self, source: str, chunk_name: str) -> Any:
        """Compile ``source`` as text into the sandbox environment and run its top level."""
        loaded = self.lua.execute("return load(...)", source, "=" + chunk_name, "t", self.env)
        fn, err = loaded if isinstance(loaded, tuple) else (loaded, None)
        if fn is None:
            raise AgentError(f"persona {self.name}: {err}")
        return self.guard(fn)

    def to_lua(self, value: Any) -> Any:
        if isinstance(value, Mapping | list | tuple):
            t = self.lua.table()
            pairs: Iterable[tuple[Any, Any]] = (value.items() if isinstance(value, Mapping)
                                                else enumerate(value, 1))
            for k, v in pairs:
                t[k] = self.to_lua(v)
            return t
        if value is None or isinstance(value, str | int | float | bool):
            return value
        return str(value)

    def to_python(self, value: Any, depth: int = 0, budget: list[int] | None = None) -> Any:
        """A Lua value as plain Python data: a table whose keys are 1..n becomes a list
        (an empty table an empty list), any other table a dict with string keys; functions
        and userdata are refused."""
        budget = budget if budget is not None else [MAX_ITEMS]
        kind = lupa.lua_type(value)
        if kind is None:
            return value
        if kind != "table":
            raise AgentError(f"persona {self.name}: cannot pass a Lua {kind} to Sediment")
        if depth >= MAX_DEPTH:
            raise AgentError(f"persona {self.name}: a table nests deeper than {MAX_DEPTH}")
        items = []
        for k, v in value.items():
            budget[0] -= 1
            if budget[0] < 0:
                raise AgentError(f"persona {self.name}: tables hold more than {MAX_ITEMS} "
                                 "items")
            items.append((k, v))
        if not items:
            return []  # {} is Lua's only empty list; a mapping's reader takes [] as {}
        keys = [k for k, _ in items]
        if all(isinstance(k, int) and not isinstance(k, bool) for k in keys) \
                and sorted(keys) == list(range(1, len(keys) + 1)):
            return [self.to_python(v, depth + 1, budget) for _, v in sorted(items)]
        out: dict[str, Any] = {}
        for k, v in items:
            if not isinstance(k, str):
                raise AgentError(f"persona {self.name}: table keys must be strings or 1..n, "
                                 f"got {str(k)[:40]!r}")
            out[k] = self.to_python(v, depth + 1, budget)
        return out

    def bridge(self, context: PersonaContext) -> Any:
        """The ``context`` table: Python functions that take and return plain Lua data."""

        def count(kind: str) -> None:
            self.calls[kind] += 1
            if sum(self.calls.values()) > MAX_CALLS:
                raise AgentError(f"persona {self.name}: more than {MAX_CALLS} context calls")

        def search(opts: Any = None) -> Any:
            count("searches")
            data = self.to_python(opts) if opts is not None else {}
            if data == []:
                data = {}
            if not isinstance(data, dict):
                raise AgentError(f"persona {self.name}: context.search takes a table such "
                                 "as {query = \"...\", k = 5}")
            return self.to_lua(context.search(data))

        def get(chunk_id: Any = None) -> Any:
            count("gets")
            if isinstance(chunk_id, bool) or not isinstance(chunk_id, int | float) \
                    or chunk_id != int(chunk_id):
                raise AgentError(f"persona {self.name}: context.get takes a chunk id (an "
                                 "integer)")
            found = context.get(int(chunk_id))
            return None if found is None else self.to_lua(found)

        def sources() -> Any:
            count("sources")
            return self.to_lua(context.sources())

        t = self.lua.table()
        t["search"], t["get"], t["sources"] = search, get, sources
        return t


def _read_script(name: str, path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"persona {name}: cannot read {path}: {exc.strerror}") from exc
    if len(data) > MAX_SCRIPT_BYTES:
        raise ConfigError(f"persona {name}: {path} is larger than {MAX_SCRIPT_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"persona {name}: {path} is not UTF-8 text") from None


def agent_table(run: _Run, name: str, source: str, chunk_name: str) -> Any:
    """Run the script's top level in ``run``; the agent table it returns (or sets as the
    global ``agent``), which must have a ``resolve`` function."""
    agent = run.load(source, chunk_name)
    if lupa.lua_type(agent) != "table":
        agent = run.env["agent"]
    if lupa.lua_type(agent) != "table" or lupa.lua_type(agent["resolve"]) != "function":
        raise AgentError(f"persona {name}: {chunk_name} must return a table (agent) with "
                         "a resolve function")
    return agent


class LuaPersona:
    """A persona whose metadata and ``resolve`` come from a Lua script (see module doc),
    run in ``pool`` (the process's default pool when None)."""

    def __init__(self, name: str, path: Path, *, config: Mapping[str, Any],
                 allowed: frozenset[str], aliases: Mapping[str, str],
                 timeout: float = DEFAULT_TIMEOUT, memory: int = DEFAULT_MEMORY,
                 pool: WorkerPool | None = None) -> None:
        self.path = path
        self.config = dict(config)
        self.timeout = timeout
        self.memory = memory
        self.allowed = allowed
        self.aliases = dict(aliases)
        self.pool = pool if pool is not None else default_pool()
        self.source = _read_script(name, path)
        meta = self.pool.run(self._job("load", name), name=name, timeout=timeout)
        if not isinstance(meta, dict):
            raise AgentError(f"persona {name}: the Lua worker gave no description")
        self.info = info_from(name, "lua", meta.get("description"), meta.get("tools"),
                              meta.get("arguments"), allowed, aliases, str(path))

    def _job(self, op: str, name: str, **extra: Any) -> dict[str, Any]:
        return {"op": op, "name": name, "chunk": self.path.name, "source": self.source,
                "memory": self.memory, **extra}

    def resolve(self, args: Mapping[str, str], context: PersonaContext) -> Resolved:
        args = check_arguments(self.info, args)
        out = self.pool.run(self._job("resolve", self.info.name, args=args,
                                      config=self.config),
                            name=self.info.name, timeout=self.timeout, context=context)
        if not isinstance(out, dict) or not isinstance(out.get("calls"), dict):
            raise AgentError(f"persona {self.info.name}: the Lua worker gave no prompt")
        prompt = prompt_from(self.info, out.get("value"), self.allowed, self.aliases)
        calls = {k: int(v) for k, v in out["calls"].items() if isinstance(v, int)}
        return Resolved(prompt.system, prompt.tools, prompt.messages, stats=calls)
