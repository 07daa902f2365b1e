"""What a proposal can make the review queue and its page show (issue 26, items 2 and 15),
through the real server and the real command: sources only from files the project compiles, never
dotfiles or layer files; bidirectional and invisible characters as escapes."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Runner
from tests.mcp.conftest import TOKEN
from tests.web.conftest import Site, call_tools, sign_in

SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
HIDDEN = "Accept\u202e tpecca\u202c and\u200b zero\u2060width\U000e0041\U000e0042 tags"


def _propose(site: Site, content: str, sources: list[object]) -> int:
    wrote, = call_tools(site.server.url, TOKEN, [("agents_context_write", {
        "content": content, "kind": "note", "confidence": 0.6, "sources": sources,
        "scope": "delta"})])
    proposed, = call_tools(site.server.url, TOKEN, [
        ("agents_context_propose", {"context_id": wrote["id"]})])
    return int(str(proposed["proposal_id"]))


def _plant(store: Path) -> None:
    (store / ".env").write_text(SECRET + "\n")
    (store / "notes.txt").write_text("NOT-COMPILED-LINE\n")


def test_the_queue_shows_only_sources_the_project_compiles(site: Site,
                                                           sediment: Runner) -> None:
    _plant(site.store)
    call_tools(site.server.url, TOKEN, [("save_memory", {
        "content": "AGDB-RAW-LAYER-BYTES: the on-call rota lives in the wiki.",
        "category": "fact", "scope": "project"})])
    assert (site.store / "AGENTS.local.db").is_file()
    pid = _propose(site, "Where the keys are kept.", [
        ".env:1", *(f"AGENTS.local.db:{n}" for n in range(1, 21)), "notes.txt:1",
        "docs/a.md:1"])
    page = sign_in(site.base, "alice").get(f"/ui/proposals/{pid}").text
    assert "Releases: every Tuesday from main." in page  # docs/a.md, a compiled file
    for leaked in ("wJalrXUtnFEMI", "AGDB-RAW-LAYER-BYTES", "NOT-COMPILED-LINE"):
        assert leaked not in page
    assert "hidden file" in page and "own files" in page and "compile" in page
    shown = sediment("proposals", "show", str(pid), "--dir", str(site.store),
                     "--root", str(site.store), "--json")
    assert shown.code == 0, shown.err
    for leaked in ("wJalrXUtnFEMI", "AGDB-RAW-LAYER-BYTES", "NOT-COMPILED-LINE"):
        assert leaked not in shown.out
    texts = {s["ref"]: s["text"] for s in shown.json()["inspection"]["provenance"]}
    assert texts["docs/a.md:1"] == "Releases: every Tuesday from main."
    assert texts[".env:1"] is None


def test_bidi_and_invisible_characters_are_escaped_on_the_page_and_in_the_terminal(
        site: Site, sediment: Runner) -> None:
    pid = _propose(site, HIDDEN, [])
    page = sign_in(site.base, "alice").get("/ui/queue").text
    for raw in ("\u202e", "\u202c", "\u200b", "\u2060", "\U000e0041"):
        assert raw not in page, repr(raw)
    assert "Accept\\u202e tpecca\\u202c and\\u200b zero\\u2060width\\U000e0041" in page
    shown = sediment("proposals", "show", str(pid), "--dir", str(site.store))
    assert shown.code == 0, shown.err
    for raw in ("\u202e", "\u200b", "\u2060", "\U000e0041"):
        assert raw not in shown.out, repr(raw)
    assert "and\\u200b zero\\u2060width\\U000e0041\\U000e0042 tags" in shown.out
    as_json = sediment("proposals", "show", str(pid), "--dir", str(site.store), "--json")
    assert "\u200b" not in as_json.out and "\U000e0041" not in as_json.out
    assert as_json.json()["inspection"]["content"] == HIDDEN
