"""Unreadable input: an error naming the file and line, raised before anything is
written; untrusted text kept as text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sediment.errors import ValidationError
from sediment.interop import FormatError
from sediment.interop.jsonstream import records
from sediment.memory import MemoryService
from tests.interop.conftest import do_import

TOKEN = "ghp_" + "a1B2" * 9


def _lines(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize(("bad", "message"), [
    ("{not json", "memory.jsonl:3: not JSON: Expecting property name"),
    ('{"type": "node", "name": "x"}', "memory.jsonl:3: type \"node\" is neither"),
    ('{"type": "entity", "name": "", "entityType": "t"}',
     "memory.jsonl:3: entity needs 'name' as non-empty text"),
    ('{"type": "entity", "name": "x", "entityType": "t", "observations": [3]}',
     "memory.jsonl:3: observations[0] must be non-empty text"),
    ('{"type": "relation", "from": "a", "to": "b"}',
     "memory.jsonl:3: relation needs 'relationType'"),
    ('[1, 2]', "memory.jsonl:3: not a JSON object"),
    (json.dumps({"type": "entity", "name": "x", "entityType": "t",
                 "observations": ["y" * 10_001]}),
     "memory.jsonl:3: content has 10004 characters; a memory holds at most 10000"),
    (json.dumps({"type": "entity", "name": "x", "entityType": "t",
                 "observations": [f"the CI token is {TOKEN}"]}),
     "memory.jsonl:3: the text looks like it contains a credential"),
])
def test_a_bad_line_is_named_and_nothing_is_written(service: MemoryService, tmp_path: Path,
                                                    bad: str, message: str) -> None:
    src = _lines(tmp_path / "memory.jsonl",
                 '{"type": "entity", "name": "a", "entityType": "t", "observations": ["o"]}',
                 "", bad)
    with pytest.raises(FormatError) as err:
        do_import(service, "mcp-memory", src)
    assert str(err.value).startswith(message), str(err.value)
    assert service.active("ada") == []


def test_mem0_errors_name_the_record_line(service: MemoryService, tmp_path: Path) -> None:
    src = tmp_path / "m.json"
    src.write_text('{"results": [\n  {"memory": "fine", "user_id": "a"},\n'
                   '  {"memory": "", "user_id": "b"}\n]}\n')
    with pytest.raises(FormatError, match=r"^m\.json:3: 'memory' must be non-empty text"):
        do_import(service, "mem0", src)
    src.write_text('[{"memory": "x", "user_id": 7}]')
    with pytest.raises(FormatError, match=r"^m\.json:1: 'user_id' must be text"):
        do_import(service, "mem0", src)
    src.write_text('[{"memory": "x"},\n{"memory": "y"}')
    with pytest.raises(FormatError, match=r"^m\.json:2: expected '\]'"):
        do_import(service, "mem0", src)
    src.write_text('{"results": []} trailing')
    with pytest.raises(FormatError, match="unexpected text after the JSON document"):
        do_import(service, "mem0", src)


def test_non_utf8_is_named_by_line(service: MemoryService, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "n.md").write_bytes(b"# N\n\n- [fact] caf\xe9 latte\n")
    with pytest.raises(FormatError, match=r"^n\.md:3: not UTF-8 text"):
        do_import(service, "basic-memory", notes)
    src = tmp_path / "memory.jsonl"
    src.write_bytes(b'{"type": "entity", "name": "a", "entityType": "t"}\n'
                    b'{"type": "entity", "name": "\xff", "entityType": "t"}\n')
    with pytest.raises(FormatError, match=r"^memory\.jsonl:2: not UTF-8 text"):
        do_import(service, "mcp-memory", src)


def test_a_value_longer_than_the_limit_is_refused(tmp_path: Path) -> None:
    src = _lines(tmp_path / "big.jsonl", '{"a": 1}', json.dumps({"b": "x" * 5000}))
    with pytest.raises(FormatError, match=r"^big\.jsonl:2: a value longer than 1000 bytes"):
        list(records(src, "big.jsonl", limit=1000))


def test_missing_instruction_files_are_named(service: MemoryService, tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="no copilot instruction files here"):
        do_import(service, "copilot", tmp_path)


def test_untrusted_text_stays_text(service: MemoryService, tmp_path: Path) -> None:
    evil = "<script>alert(1)</script> \x1b[31mred\x1b[0m {{ seven }} $(rm -rf /)"
    src = _lines(tmp_path / "memory.jsonl", json.dumps(
        {"type": "entity", "name": "x", "entityType": "t", "observations": [evil]}))
    do_import(service, "mcp-memory", src)
    assert f"x: {evil}" in [m.content for m in service.active("ada")]
    out = service.active("ada")
    assert any(m.origin and m.origin.get("text") == evil for m in out)


def test_a_large_export_is_read_in_bounded_memory(tmp_path: Path) -> None:
    import tracemalloc

    record = json.dumps({"memory": "m" * 180, "user_id": "u", "metadata": {"k": 1}})
    for name, text in (("lines.jsonl", "\n".join([record] * 12_000)),
                       ("array.json", '{"results": [' + ",".join([record] * 12_000) + "]}")):
        path = tmp_path / name
        path.write_text(text)
        assert path.stat().st_size > 2_400_000
        tracemalloc.start()
        count = sum(1 for _ in records(path, name))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert count == 12_000
        assert peak < 600_000, peak  # a quarter of the file


def test_a_bad_actor_or_scope_is_named_before_reading(service: MemoryService,
                                                      tmp_path: Path) -> None:
    src = _lines(tmp_path / "memory.jsonl", "{not json")
    with pytest.raises(ValidationError, match=r"^actor 'no way' is invalid"):
        do_import(service, "mcp-memory", src, actor="no way")
    with pytest.raises(ValidationError, match=r"^scope 'team' is unknown"):
        do_import(service, "mcp-memory", src, scope="team")
