"""MCP over stdio, where a message the SDK cannot read still gets an answer.

The SDK's stdio transport drops a line it cannot parse (it hands the error to a debug
log), so a client that sent a lone surrogate escape (``"\\ud800"``, common from JavaScript)
or JSON nested deeper than the parser's limit waits for an answer until its own timeout.
:func:`run_stdio` puts two pumps between the process's stdin/stdout and the SDK: every
incoming line is checked with the SDK's own message model first, forwarded when it passes,
and otherwise answered with a JSON-RPC error naming the problem (the request's ``id`` when
one can be found, else ``null``) and logged on stderr. The SDK's output goes through the
same writer a whole line at a time, so an error never lands inside another message.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import mcp_types as types
import pydantic

__all__ = ["MAX_DEPTH", "Refusal", "check_line", "run_stdio"]

MAX_DEPTH = 200
"""Nesting levels of arrays and objects the SDK's JSON parser accepts."""
PARSE_ERROR, INVALID_REQUEST = -32700, -32600
_READ = 1 << 16


class Refusal(Exception):
    """A line that is not a readable JSON-RPC message: the error answer to send."""

    def __init__(self, code: int, message: str, msg_id: int | str | None) -> None:
        super().__init__(message)
        self.code, self.message, self.msg_id = code, message, msg_id

    def response(self) -> bytes:
        return (json.dumps({"jsonrpc": "2.0", "id": self.msg_id,
                            "error": {"code": self.code, "message": self.message}})
                + "\n").encode()


def check_line(raw: bytes) -> None:
    """Pass when the SDK can read ``raw`` as a JSON-RPC message; else raise
    :class:`Refusal` saying why."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refusal(PARSE_ERROR, f"the message is not UTF-8 text (byte {exc.start})",
                      _scan(raw.decode("utf-8", "replace"))[1]) from None
    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        return
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        sdk = f"{'.'.join(str(p) for p in first.get('loc', ()))}: {first.get('msg', '')}"
    depth, found_id = _scan(text)
    if depth > MAX_DEPTH:
        raise Refusal(PARSE_ERROR, f"the message nests {depth} levels of arrays and "
                                   f"objects; at most {MAX_DEPTH} are accepted", found_id)
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise Refusal(PARSE_ERROR, f"the message is not JSON: {exc}", found_id) from None
    msg_id = _id_of(value, found_id)
    where = _lone_surrogate(value, "")
    if where is not None:
        path, char = where
        raise Refusal(PARSE_ERROR, f"{path or 'the message'} holds a lone UTF-16 surrogate "
                                   f"escape (\\u{ord(char):04x}); JSON text must be "
                                   "Unicode: send a surrogate pair or the character itself",
                      msg_id)
    raise Refusal(INVALID_REQUEST, f"not a JSON-RPC 2.0 message: {sdk.strip(': ')[:300]}",
                  msg_id)


def _id_of(value: Any, fallback: int | str | None) -> int | str | None:
    if isinstance(value, dict):
        found = value.get("id")
        if isinstance(found, str | int) and not isinstance(found, bool):
            return found
        return None
    return fallback


def _lone_surrogate(value: Any, path: str) -> tuple[str, str] | None:
    """Where a string (or key) of ``value`` holds a lone surrogate, and which one."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            bad = next((c for c in item if 0xD800 <= ord(c) <= 0xDFFF), None)
            if bad is not None:
                return at, bad
        elif isinstance(item, dict):
            for k, v in item.items():
                stack.append((k, at))
                stack.append((v, f"{at}.{k}" if at else str(k)))
        elif isinstance(item, list):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(item))
    return None


def _scan(text: str) -> tuple[int, int | str | None]:
    """The deepest nesting of ``text`` and the top-level ``"id"`` when it is a plain
    number or string, read without a parser (so any depth works)."""
    depth = deepest = 0
    i, n = 0, len(text)
    found: int | str | None = None
    key: str | None = None
    expect_key = False
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            literal = text[i:j + 1]
            if depth == 1 and expect_key:
                key = literal
            elif depth == 1 and key == '"id"' and found is None:
                with contextlib.suppress(ValueError):
                    found = json.loads(literal)
            i = j + 1
            continue
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
            expect_key = c == "{" and depth == 1
        elif c in "]}":
            depth -= 1
        elif c == ",":
            expect_key = depth == 1
            key = None if depth == 1 else key
        elif c == ":":
            expect_key = False
        elif depth == 1 and key == '"id"' and found is None and (c.isdigit() or c == "-"):
            j = i
            while j < n and (text[j].isdigit() or text[j] == "-"):
                j += 1
            with contextlib.suppress(ValueError):
                found = int(text[i:j])
            i = j
            continue
        i += 1
    return deepest, found if isinstance(found, str | int) else None


class _Wire:
    """The real stdout: whole lines only, from the SDK and from the checker alike."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()

    def write_line(self, line: bytes) -> None:
        with self.lock:
            view = memoryview(line)
            while view:
                try:
                    view = view[os.write(self.fd, view):]
                except OSError:
                    return


def _pump_in(wire_in: int, to_sdk: int, wire: _Wire, log: Callable[[str], None]) -> None:
    try:
        for line, _ in _lines(wire_in):
            _forward(line, to_sdk, wire, log)
    finally:
        with contextlib.suppress(OSError):
            os.close(to_sdk)


def _forward(line: bytes, to_sdk: int, wire: _Wire, log: Callable[[str], None]) -> None:
    if not line.strip():
        return
    try:
        check_line(line)
    except Refusal as refusal:
        log(f"sediment: answered a message it cannot read with error {refusal.code}: "
            f"{refusal.message}")
        wire.write_line(refusal.response())
        return
    data = memoryview(line + b"\n")
    while data:
        data = data[os.write(to_sdk, data):]


def _pump_out(from_sdk: int, wire: _Wire, stop: int) -> None:
    for line, complete in _lines(from_sdk, stop):
        wire.write_line(line + b"\n" if complete else line)
    with contextlib.suppress(OSError):
        os.close(from_sdk)


def _lines(fd: int, stop: int | None = None) -> Iterator[tuple[bytes, bool]]:
    """Each line read from ``fd`` without its newline, and whether it had one (only a last
    line cut off by the end of the stream has not), until the stream ends or fails, or,
    once ``stop`` (a pipe's read end) is readable, until ``fd`` has nothing more to give:
    the SDK keeps a copy of the server's stdout open, so its pipe never reaches its end."""
    pending = b""
    stopping = False
    while True:
        if stop is not None:
            ready = select.select([fd, stop], [], [], 0 if stopping else None)[0]
            if fd not in ready:
                if stopping or not ready:
                    break
                stopping = True
                continue
        try:
            chunk = os.read(fd, _READ)
        except OSError:
            break
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line, True
    if pending:
        yield pending, False


def run_stdio(serve: Callable[[], None]) -> None:
    """Run ``serve`` (the SDK's stdio server, reading fd 0 and writing fd 1) behind the
    checking pumps; returns when it does."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    sdk_in, to_sdk = os.pipe()
    from_sdk, sdk_out = os.pipe()
    os.dup2(sdk_in, 0)
    os.dup2(sdk_out, 1)
    os.close(sdk_in)
    os.close(sdk_out)
    wire = _Wire(wire_out)

    def log(message: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            print(message, file=sys.stderr, flush=True)

    stop_r, stop_w = os.pipe()
    pumps = [threading.Thread(target=_pump_in, args=(wire_in, to_sdk, wire, log),
                              name="sediment-stdio-in", daemon=True),
             threading.Thread(target=_pump_out, args=(from_sdk, wire, stop_r),
                              name="sediment-stdio-out", daemon=True)]
    for t in pumps:
        t.start()
    try:
        serve()
    finally:
        sys.stdout.flush()
        os.dup2(wire_out, 1)
        os.close(stop_w)  # the out pump forwards what is left, then stops
        pumps[1].join(10)
        os.close(stop_r)
        os.dup2(wire_in, 0)
