"""Each format through the memory service: import, export, import again writes nothing
and loses nothing; provenance, categories, actors and relationships as documented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sediment.interop import FORMATS
from sediment.memory import MemoryService
from tests.interop.conftest import do_export, do_import, write_files
from tests.interop.samples import (
    GRAPH,
    MEM0,
    write_graph,
    write_mem0,
    write_notes,
    write_repo,
)


def _graph(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode().splitlines()]


def test_mcp_memory_round_trip(service: MemoryService, tmp_path: Path) -> None:
    src = write_graph(tmp_path / "memory.jsonl")
    first = do_import(service, "mcp-memory", src)
    assert (first.created, first.existing) == (7, 0)
    out = do_export(service, "mcp-memory")
    assert isinstance(out, bytes)
    got = _graph(out)
    entities = [r for r in got if r["type"] == "entity"]
    assert {r["name"]: r for r in entities}["Rosa_Diaz"] == GRAPH[0]
    assert [r for r in got if r["type"] == "relation"] == [GRAPH[1], GRAPH[3]]
    assert [r["name"] for r in entities] == ["Rosa_Diaz", "Ledger"]  # Postgres: only named
    again = tmp_path / "again.jsonl"
    again.write_bytes(out)
    second = do_import(service, "mcp-memory", again)
    assert (second.created, second.existing) == (0, 7)
    assert do_export(service, "mcp-memory") == out


def test_mcp_memory_relationships_and_provenance(service: MemoryService,
                                                 tmp_path: Path) -> None:
    do_import(service, "mcp-memory", write_graph(tmp_path / "memory.jsonl"))
    rows = {m.content: m for m in service.active("ada")}
    rosa, ledger = rows["Rosa_Diaz (person)"], rows["Ledger (module)"]
    owns = rows["Rosa_Diaz owns Ledger"]
    assert owns.related_to == ["memory.jsonl:2", str(rosa.ref.id), str(ledger.ref.id)]
    assert rows["Rosa_Diaz: Prefers squash merges"].related_to == ["memory.jsonl:1",
                                                                   str(rosa.ref.id)]
    assert owns.context == "Rosa_Diaz" and owns.category == "fact"


def test_mem0_round_trip_per_actor(service: MemoryService, tmp_path: Path) -> None:
    report = do_import(service, "mem0", write_mem0(tmp_path / "export.json"))
    assert report.created == 3
    assert report.actors == {"sam.o-example.org", "lin", "ops-bot"}
    sam = service.active("sam.o-example.org")
    assert [(m.content, m.category, m.source) for m in sam] == [
        ("Drinks oat milk lattes", "preference", "inferred")]
    out = do_export(service, "mem0", ("sam.o-example.org", "lin", "ops-bot"))
    assert isinstance(out, bytes)
    assert json.loads(out)["results"] == [
        {k: v for k, v in r.items() if v is not None} for r in MEM0["results"]]
    (tmp_path / "back.json").write_bytes(out)
    again = do_import(service, "mem0", tmp_path / "back.json")
    assert (again.created, again.existing) == (0, 3)


def test_mem0_export_of_memories_saved_here(service: MemoryService) -> None:
    service.save("kai", "Uses vim keybindings", "preference", "explicit")
    out = do_export(service, "mem0", ("kai",))
    assert isinstance(out, bytes)
    (rec,) = json.loads(out)["results"]
    assert rec["memory"] == "Uses vim keybindings" and rec["user_id"] == "kai"
    assert rec["metadata"] == {"category": "preference"} and len(rec["id"]) == 36


def test_basic_memory_round_trip(service: MemoryService, tmp_path: Path) -> None:
    notes = write_notes(tmp_path / "notes")
    first = do_import(service, "basic-memory", notes)
    assert first.existing == 0
    cats = {m.content: m.category for m in service.active("ada")}
    assert cats["Release Process: Releases are cut from main #release"] == "fact"
    assert cats["Release Process: Wheels are built in CI (not locally)"] == "fact"
    out = do_export(service, "basic-memory")
    assert isinstance(out, dict) and sorted(out) == ["eng/ci.md", "release.md"]
    text = out["release.md"].decode()
    assert text.startswith("---\ntitle: Release Process\ntype: process\ntags: [release, ci]"
                           "\npermalink: release-process\n---\n")
    for line in ("- [decision] Wheels are built in CI (not locally)",
                 "- uses [[CI Pipeline]] (GitHub Actions)", "- [ ] an open task, which is prose",
                 "How a version goes out.\nTwo people sign off.",
                 "## Steps\nTag first, then build."):
        assert line in text
    back = write_files(tmp_path / "back", out)
    again = do_import(service, "basic-memory", back)
    assert (again.created, again.existing) == (0, first.created)
    assert do_export(service, "basic-memory") == out


@pytest.mark.parametrize("fmt", ["claude", "agents-md", "cursor", "copilot", "cline"])
def test_instruction_files_round_trip(service: MemoryService, tmp_path: Path,
                                      fmt: str) -> None:
    repo = write_repo(tmp_path / "repo")
    first = do_import(service, fmt, repo)
    assert first.created > 0  # AGENTS.md includes style.md, which includes CLAUDE.md: the
    # same text as AGENTS.md, kept once
    out = do_export(service, fmt)
    assert isinstance(out, dict)
    back = write_files(tmp_path / "back", out)
    again = do_import(service, fmt, back)
    assert (again.created, again.existing) == (0, first.created)
    assert do_export(service, fmt) == out


def test_claude_files_nested_includes_and_guards(service: MemoryService,
                                                 tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "repo")
    report = do_import(service, "claude", repo)
    rows = {m.content: m for m in service.active("ada", "project")}
    assert rows["Type hints everywhere"].related_to == ["docs/style.md:2"]
    assert rows["Type hints everywhere"].origin["included_from"] == "CLAUDE.md:3"
    assert rows["Errors are JSON"].related_to == ["api/CLAUDE.md:2"]
    assert rows["No sleeps in tests;\nfollow events instead."].category == "instruction"
    assert "outside the root" not in rows
    assert any("@../secrets.md is outside" in n for n in report.notes)
    assert any("@../CLAUDE.md includes a file that includes it" in n for n in report.notes)
    out = do_export(service, "claude")
    assert isinstance(out, dict)
    assert sorted(out) == ["CLAUDE.md", "api/CLAUDE.md", "docs/style.md"]
    assert out["CLAUDE.md"].decode() == (
        "# Guide\n\nRead @docs/style.md first; never @../secrets.md.\n\n## Tests\n\n"
        "- Run the suite with `-n 0`\n- No sleeps in tests;\n  follow events instead.\n\n"
        "```sh\nmake check\n```\n")


def test_include_through_a_symlink_out_of_the_root_is_not_read(
        service: MemoryService, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (tmp_path / "private.md").write_text("- private rule\n")
    (repo / "link.md").symlink_to(tmp_path / "private.md")
    (repo / "CLAUDE.md").write_text("- Follow @link.md\n")
    report = do_import(service, "claude", repo)
    assert report.created == 1
    assert any("@link.md is outside" in n for n in report.notes)


def test_an_instruction_file_linking_out_of_the_root_is_not_read(
        service: MemoryService, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (tmp_path / "elsewhere.md").write_text("- not ours\n")
    (repo / "CLAUDE.md").write_text("- ours\n")
    (repo / "sub" / "CLAUDE.md").symlink_to(tmp_path / "elsewhere.md")
    report = do_import(service, "claude", repo)
    assert report.created == 1
    assert report.notes == [f"sub/CLAUDE.md links outside {repo}; not read"]


def test_includes_stop_at_five_levels(service: MemoryService, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "CLAUDE.md").write_text("- level 0 @l1.md\n")
    for i in range(1, 8):
        (repo / f"l{i}.md").write_text(f"- level {i} @l{i + 1}.md\n")
    report = do_import(service, "claude", repo)
    assert report.created == 6
    assert any("more than 5 includes deep" in n for n in report.notes)


def test_cursor_rule_front_matter(service: MemoryService, tmp_path: Path) -> None:
    do_import(service, "cursor", write_repo(tmp_path / "repo"))
    rows = {m.content: m for m in service.active("ada", "project")}
    assert rows["Prefer pathlib"].category == "convention"
    assert rows["Answer briefly."].category == "instruction"
    assert rows["Prefer pathlib"].origin["front_matter"] == (
        "description: Python style\nglobs: *.py\nalwaysApply: false")
    out = do_export(service, "cursor")
    assert isinstance(out, dict)
    assert out[".cursor/rules/python.mdc"].decode() == (
        "---\ndescription: Python style\nglobs: *.py\nalwaysApply: false\n---\n\n"
        "- Prefer pathlib\n- Small modules\n")


def test_cline_memory_bank_categories(service: MemoryService, tmp_path: Path) -> None:
    do_import(service, "cline", write_repo(tmp_path / "repo") / "memory-bank")
    cats = {m.content: m.category for m in service.active("ada", "project")}
    assert cats == {"A context store for agents.": "fact",
                    "State changes are events": "pattern", "Ids never reused": "pattern",
                    "Building the importer.": "fact"}


def test_memories_saved_here_export_and_come_back_as_the_same(
        service: MemoryService, tmp_path: Path) -> None:
    service.save("ada", "Prefers dark roast", "preference", "explicit", context="coffee")
    service.save("ada", "Uses a standing desk", "fact", "explicit")
    for fmt in ("mcp-memory", "basic-memory", "claude"):
        out = do_export(service, fmt)
        target = tmp_path / fmt
        target.mkdir()
        if isinstance(out, bytes):
            (target / "memory.jsonl").write_bytes(out)
            path = target / "memory.jsonl"
        else:
            path = write_files(target, out)
        scope = "user" if fmt == "claude" else None
        report = do_import(service, fmt, path, scope=scope)
        contents = [m.content for m in service.active("ada")]
        assert contents.count("Prefers dark roast") == 1, (fmt, contents)
        assert report.existing >= 2


def test_dry_run_writes_nothing_and_says_what_exists(service: MemoryService,
                                                     tmp_path: Path) -> None:
    src = write_graph(tmp_path / "memory.jsonl")
    rows: list[dict] = []
    report = do_import(service, "mcp-memory", src, dry_run=True, rows=rows)
    assert (report.new, report.created) == (7, 0)
    assert service.active("ada") == []
    assert rows[0] == {"status": "new", "id": None, "actor": "ada", "category": "fact",
                       "content": "Rosa_Diaz (person)", "source": "memory.jsonl:1",
                       "context": "Rosa_Diaz"}
    do_import(service, "mcp-memory", src)
    rows.clear()
    report = do_import(service, "mcp-memory", src, dry_run=True, rows=rows)
    assert (report.new, report.existing) == (0, 7)
    assert {r["status"] for r in rows} == {"exists"}


def test_every_format_is_registered() -> None:
    from sediment.cli._export import FORMATS as NAMED

    assert set(NAMED) == set(FORMATS)
