"""The worker process behind Lua personas (started by :mod:`sediment.agents.workers`).

It reads jobs from stdin and answers on the stdout it had at start (then points fd 1 at
stderr, so nothing else can write into the protocol). A job is::

    {"op": "load" | "resolve", "name", "chunk", "source", "memory", "timeout", "limit",
     "args", "config"}

and runs in a fresh sandbox (:class:`sediment.agents.lua._Run`) with a soft time limit of
``timeout`` seconds; ``context.search/get/sources`` become ``{"call", "arg"}`` messages the
parent answers. The answer is ``{"result": ...}`` (load: the agent's description, tools and
arguments; resolve: the plain value ``resolve`` returned and the context calls made) or
``{"error": message, "kind": "timeout" | "agent"}``.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from typing import IO, Any

from sediment.errors import AgentError, AgentTimeoutError

__all__ = ["main"]

_CPU_SPARE = 10
"""CPU seconds past a job's limit after which the kernel ends the worker (its parent should
have killed it long before; this covers a parent that died)."""


class _Proxy:
    """The ``context`` a script sees, answered by the parent process."""

    def __init__(self, out: IO[bytes], src: IO[bytes]) -> None:
        self.out, self.src = out, src

    def _call(self, kind: str, arg: Any = None) -> Any:
        from sediment.agents.workers import read_message, write_message

        write_message(self.out, {"call": kind, "arg": arg})
        reply = read_message(self.src)
        if reply is None:
            os._exit(0)
        if "error" in reply:
            raise RuntimeError(str(reply["error"]))
        return reply.get("result")

    def search(self, opts: Mapping[str, Any]) -> list[dict[str, Any]]:
        return list(self._call("search", dict(opts)) or [])

    def get(self, chunk_id: int) -> dict[str, Any] | None:
        found = self._call("get", chunk_id)
        return found if isinstance(found, dict) else None

    def sources(self) -> list[dict[str, Any]]:
        return list(self._call("sources") or [])


def _limit_cpu(seconds: float) -> None:
    try:
        import resource
    except ImportError:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(usage.ru_utime + usage.ru_stime + seconds) + _CPU_SPARE
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _plain(value: Any, name: str) -> Any:
    """``value`` with every bytes object refused (JSON carries text only)."""
    if isinstance(value, bytes):
        raise AgentError(f"persona {name}: a string the script returned is not UTF-8 text")
    if isinstance(value, list):
        return [_plain(v, name) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, name) for k, v in value.items()}
    return value


def _run(job: Mapping[str, Any], proxy: _Proxy) -> Any:
    from sediment.agents.lua import _Run, agent_table

    name = str(job["name"])
    run = _Run(name, float(job["timeout"]), int(job["memory"]), limit=float(job["limit"]))
    agent = agent_table(run, name, str(job["source"]), str(job["chunk"]))
    if job["op"] == "load":
        return _plain(run.guard(lambda: {k: run.to_python(agent[k])
                                         for k in ("description", "tools", "arguments")}),
                      name)
    bridge = run.bridge(proxy)
    value = run.guard(lambda: agent["resolve"](run.to_lua(job["args"]),
                                               run.to_lua(job["config"]), bridge))
    return {"value": _plain(run.guard(lambda: run.to_python(value)), name),
            "calls": dict(run.calls)}


def main() -> None:
    from sediment.agents.workers import read_message, write_message

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    src = os.fdopen(0, "rb", buffering=0)
    sys.stdin = open(os.devnull)  # noqa: SIM115
    proxy = _Proxy(out, src)
    write_message(out, {"ready": True})
    while True:
        job = read_message(src)
        if job is None:
            return
        _limit_cpu(float(job.get("limit", 30)))
        try:
            answer: dict[str, Any] = {"result": _run(job, proxy)}
        except AgentTimeoutError as exc:
            answer = {"error": str(exc), "kind": "timeout"}
        except AgentError as exc:
            answer = {"error": str(exc), "kind": "agent"}
        except Exception as exc:
            answer = {"error": f"persona {job.get('name')}: {type(exc).__name__}: "
                               f"{str(exc)[:500]}", "kind": "agent"}
        write_message(out, answer)
