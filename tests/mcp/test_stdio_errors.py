"""Every line sent over stdio gets an answer (issue 26 item 9): a lone surrogate escape or
JSON nested 1,000 deep got none, and the client waited until its timeout."""

from __future__ import annotations

import json
import selectors
import subprocess
import time
from pathlib import Path

import pytest

from sediment.server.stdio import PARSE_ERROR, request_id
from tests.mcp.conftest import SEDIMENT

WAIT = 60.0


def _answer(proc: subprocess.Popen[bytes], sel: selectors.BaseSelector) -> dict[str, object]:
    assert proc.stdout is not None
    deadline = time.monotonic() + WAIT
    line = b""
    while not line.endswith(b"\n"):
        assert time.monotonic() < deadline, "no answer"
        if sel.select(timeout=1):
            piece = proc.stdout.readline()
            assert piece, "the server closed stdout"
            line += piece
    answer: dict[str, object] = json.loads(line)
    return answer


def test_unreadable_lines_get_json_rpc_errors(store: Path) -> None:
    proc = subprocess.Popen([SEDIMENT, "serve", "--dir", str(store), "--embedder", "hash",
                             "--no-warm-up"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)

    def send(text: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(text.encode() + b"\n")
        proc.stdin.flush()

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}))
        assert _answer(proc, sel)["id"] == 1
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        cases = [
            ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": '
             '"agents_search", "arguments": {"query": "\\ud800"}}}', 7, "lone surrogate"),
            ('{"jsonrpc": "2.0", "id": "deep", "method": "ping", "params": {"x": '
             + "[" * 1000 + "]" * 1000 + "}}", "deep", "too deeply"),
            ("this is not json", None, "not valid JSON"),
        ]
        for line, rid, problem in cases:
            send(line)
            got = _answer(proc, sel)
            error = got["error"]
            assert isinstance(error, dict)
            assert got["id"] == rid and error["code"] == PARSE_ERROR
            assert problem in str(error["message"]), error
        send(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"}))
        assert _answer(proc, sel) == {"jsonrpc": "2.0", "id": 9, "result": {}}
    finally:
        proc.stdin.close()
        try:
            proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(WAIT)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
    assert stderr.count("refused a message on stdin") == 3


@pytest.mark.parametrize(("line", "rid"), [
    ('{"jsonrpc": "2.0", "id": 3, "x": "\\ud800"}', 3),
    ('{"id": "a\\"b", "x": ' + "[" * 5000 + "]" * 5000 + "}", 'a"b'),
    ('{"id": true}', None), ("[1, 2]", None), ("", None), ('{"id": 12', 12)])
def test_the_request_id_is_found_in_a_line_that_cannot_be_read(line: str,
                                                              rid: str | int | None) -> None:
    assert request_id(line) == rid
