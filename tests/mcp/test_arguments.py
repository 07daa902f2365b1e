"""A tool's arguments reach its request model as sent: the SDK neither coerces them nor
decodes JSON found in strings nor drops unknown names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp import Client
from sediment.server import build_server
from tests.conftest import files_workspace
from tests.mcp.conftest import make_store


def _call(tmp_path: Path, arguments: dict[str, Any]) -> tuple[bool, str]:
    server = build_server(files_workspace(make_store(tmp_path / "s")))

    async def main() -> tuple[bool, str]:
        async with Client(server) as client:
            r = await client.call_tool("agents_search", arguments)
            text = " ".join(getattr(c, "text", "") for c in r.content)
            return bool(r.is_error), text

    return anyio.run(main)


@pytest.mark.parametrize(("arguments", "named"), [
    ({"query": "install", "k": "5"}, "k"),
    ({"query": "install", "k": True}, "k"),
    ({"query": "install", "layers": '["base"]'}, "layers"),
    ({"query": "install", "colour": "red"}, "colour"),
])
def test_a_loose_argument_is_refused_by_name(tmp_path: Path, arguments: dict[str, Any],
                                             named: str) -> None:
    failed, text = _call(tmp_path, arguments)
    assert failed and named in text


def test_a_strict_call_is_answered(tmp_path: Path) -> None:
    failed, text = _call(tmp_path, {"query": "install", "k": 2, "layers": ["base"]})
    assert not failed and text
