"""``sediment agent init``, ``list`` and ``test`` as a user runs them."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Runner


def test_init_scaffolds_a_script_that_resolves(tmp_path: Path, sediment: Runner) -> None:
    (tmp_path / "sediment.toml").write_text("")
    (tmp_path / "notes.md").write_text("# Releases\n\nReleases ship on Tuesdays.\n")
    assert sediment("compile", "--root", str(tmp_path), "--out",
                    str(tmp_path / "AGENTS.db"), cwd=tmp_path).code == 0
    r = sediment("agent", "init", "sre-helper", cwd=tmp_path)
    assert r.code == 0, r.err
    script = tmp_path / "agents" / "sre-helper.lua"
    assert r.out.startswith(f"Created: {script}\n")
    snippet = r.out.split("Add to sediment.toml:\n\n", 1)[1]
    assert snippet == ('[agents.script.sre-helper]\npath = "agents/sre-helper.lua"\n'
                       "timeout = 30\n\n")
    with (tmp_path / "sediment.toml").open("a") as fh:
        fh.write(snippet)
    listed = sediment("agent", "list", cwd=tmp_path)
    assert listed.code == 0, listed.err
    assert listed.out.startswith("sre-helper ") and "[lua]" in listed.out
    r = sediment("agent", "test", "sre-helper", "--arg", "topic=releases", cwd=tmp_path)
    assert r.code == 0, r.err
    assert "Releases ship on Tuesdays." in r.out
    assert "[assistant] I have read 1 notes on releases." in r.out
    assert "(1 searches, 0 document fetches)" in r.out

    again = sediment("agent", "init", "sre-helper", cwd=tmp_path)
    assert again.code == 1 and "already exists" in again.err
    assert "Releases" not in script.read_text() and "agent.resolve" in script.read_text()


def test_init_refuses_a_bad_name(tmp_path: Path, sediment: Runner) -> None:
    r = sediment("agent", "init", "../escape", cwd=tmp_path)
    assert r.code == 1 and "persona name '../escape'" in r.err
    assert not (tmp_path / "escape.lua").exists()


def test_bad_arg_syntax(tmp_path: Path, sediment: Runner) -> None:
    (tmp_path / "sediment.toml").write_text('[agents.a]\nsystem_prompt = "x"\n')
    r = sediment("agent", "test", "a", "--arg", "novalue", cwd=tmp_path)
    assert r.code == 1 and r.err == "Error: --arg 'novalue': write KEY=VALUE\n"


def test_untrusted_text_is_printed_literally(tmp_path: Path, sediment: Runner) -> None:
    hostile = "[bold red]not markup[/] \x1b[31mred\x1b[0m \x07bell"
    (tmp_path / "sediment.toml").write_text(
        '[agents.a]\ndescription = "[link=x]d[/link] \\u001b[2J"\n'
        'system_prompt = "Topic: {{topic}}"\n'
        'arguments = [{ name = "topic" }]\n')
    r = sediment("agent", "test", "a", "--arg", f"topic={hostile}", cwd=tmp_path)
    assert r.code == 0, r.err
    assert "\x1b" not in r.out and "\x07" not in r.out
    assert "Topic: [bold red]not markup[/] \\x1b[31mred\\x1b[0m \\x07bell" in r.out
    listed = sediment("agent", "list", cwd=tmp_path)
    assert "[link=x]d[/link] \\x1b[2J" in listed.out and "\x1b" not in listed.out


def test_init_json(tmp_path: Path, sediment: Runner) -> None:
    r = sediment("agent", "init", "helper", "--dir", "personas", "--json", cwd=tmp_path)
    assert r.code == 0, r.err
    assert r.json() == {"path": str(tmp_path / "personas" / "helper.lua"),
                        "config": '[agents.script.helper]\npath = "personas/helper.lua"\n'
                                  "timeout = 30\n"}
