"""Over stdio, a message the server cannot read gets a JSON-RPC error naming why (issue 26
item 9): a lone surrogate escape, JSON nested past the parser's limit, garbage, a wrong
shape; the session goes on."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sediment.server.stdio import MAX_DEPTH, Refusal, check_line
from tests import zygote
from tests.mcp.conftest import SEDIMENT, make_store

pytestmark = pytest.mark.timeout(120)

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}}


class Session:
    def __init__(self, store: Path) -> None:
        self.proc = subprocess.Popen(
            [zygote.script(SEDIMENT),
             "serve", "--dir", str(store), "--embedder", "hash", "--no-warm-up"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "SEDIMENT_EMBEDDER": "hash"})
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, raw: bytes) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()
        return dict(json.loads(self.lines.get(timeout=60)))

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        self.proc.wait(30)
        err = self.proc.stderr.read().decode()
        self.proc.stderr.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return err


def test_unreadable_messages_are_answered_and_the_session_goes_on(tmp_path: Path) -> None:
    s = Session(make_store(tmp_path / "store"))
    try:
        assert s.send(json.dumps(INIT).encode())["id"] == 1
        surrogate = (b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":'
                     b'"agents_search","arguments":{"query":"\\ud800"}}}')
        got = s.send(surrogate)
        assert got["id"] == 2 and got["error"]["code"] == -32700
        assert got["error"]["message"].startswith(
            "params.arguments.query holds a lone UTF-16 surrogate escape (\\ud800)")
        deep = (b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"a":' + b"[" * 1000
                + b"]" * 1000 + b"}}")
        got = s.send(deep)
        assert got == {"jsonrpc": "2.0", "id": 3, "error": {
            "code": -32700, "message": "the message nests 1002 levels of arrays and objects; "
                                       f"at most {MAX_DEPTH} are accepted"}}
        got = s.send(b"garbage")
        assert got["id"] is None and got["error"]["message"].startswith("the message is not "
                                                                        "JSON")
        got = s.send(b'{"jsonrpc":"2.0","id":"x","method":5}')
        assert got["id"] == "x" and got["error"]["code"] == -32600
        assert s.send(b'{"jsonrpc":"2.0","id":4,"method":"ping"}') == {
            "jsonrpc": "2.0", "id": 4, "result": {}}
    finally:
        err = s.close()
    assert err.count("sediment: answered a message it cannot read") == 4


def request(params: Any, msg_id: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": params}


@settings(max_examples=60, deadline=None)
@given(depth=st.integers(min_value=0, max_value=400), msg_id=st.integers(0, 2**31))
@example(depth=197, msg_id=0)
@example(depth=198, msg_id=0)
def test_nesting_is_read_up_to_the_limit_and_named_past_it(depth: int, msg_id: int) -> None:
    raw = json.dumps(request({"name": "x", "arguments": {"a": 0}}, msg_id)).encode()
    # a value in the innermost array: the SDK's parser does not count an empty one as a
    # level (it accepts 201 levels that end in ``[]``, as hypothesis found)
    inner = b"[" * depth + b"0" + b"]" * depth
    raw = raw.replace(b'{"a": 0}', b'{"a": ' + inner + b"}")
    total = depth + 3
    if total <= MAX_DEPTH:
        check_line(raw)
        return
    with pytest.raises(Refusal) as caught:
        check_line(raw)
    assert caught.value.msg_id == msg_id
    assert f"nests {total} levels" in caught.value.message


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=20), point=st.integers(0xD800, 0xDFFF),
       msg_id=st.one_of(st.integers(-5, 10**9), st.text(max_size=10)))
def test_a_lone_surrogate_anywhere_is_named_with_its_id(text: str, point: int,
                                                        msg_id: int | str) -> None:
    raw = json.dumps(request({"name": "x", "arguments": {"q": text + chr(point)}}, 0))
    raw = raw.replace('"id": 0', f'"id": {json.dumps(msg_id)}', 1)
    with pytest.raises(Refusal) as caught:
        check_line(raw.encode())
    assert caught.value.msg_id == msg_id
    assert caught.value.message.startswith("params.arguments.q holds a lone UTF-16 "
                                           f"surrogate escape (\\u{point:04x})")
