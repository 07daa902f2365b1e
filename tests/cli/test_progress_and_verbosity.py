"""Long work shows progress everywhere; -q and -v on every command (issue 15, item 11)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
from pathlib import Path

import click

from sediment.cli import cli
from sediment.cli.reference import _walk
from tests import zygote
from tests.cli.conftest import SEDIMENT, Runner

LINE = re.compile(r"^(reading|embedding) \d+/\d+ \(\d+%, [\d.]+/s, ETA (\d+:\d\d:\d\d|-)\)$")


def docs(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    for n in range(5):
        (root / "docs" / f"p{n}.md").write_text(f"# Page {n}\n\nText {n} about deploys.\n")
    (root / "docs" / "blob.md").write_bytes(b"\x00binary")
    return root


def compile_args(root: Path) -> tuple[str, ...]:
    return ("compile", "--root", str(root), "--include", "**/*.md", "--out",
            str(root / "AGENTS.db"))


def test_piped_progress_is_a_line_at_most_every_interval(sediment: Runner,
                                                         tmp_path: Path) -> None:
    root = docs(tmp_path)
    quiet = sediment(*compile_args(root))
    assert quiet.code == 0 and not any(LINE.match(x) for x in quiet.err.splitlines())
    r = sediment(*compile_args(root), env={"SEDIMENT_PROGRESS_SECONDS": "0"})
    assert r.code == 0, r.err
    lines = [x for x in r.err.splitlines() if LINE.match(x)]
    assert any(x.startswith("embedding") for x in lines), r.err
    assert "skipped docs/blob.md" in r.err


def test_quiet_silences_progress_and_notes(sediment: Runner, tmp_path: Path) -> None:
    root = docs(tmp_path)
    r = sediment(*compile_args(root), "-q", env={"SEDIMENT_PROGRESS_SECONDS": "0"})
    assert r.code == 0 and r.err == "", r.err
    assert r.out.startswith("compiled")
    v = sediment("search", "deploys", "--dir", str(root), "--verbose")
    assert v.code == 0 and "embedder: hash" in v.err


def test_terminal_bar_has_rate_and_eta(tmp_path: Path) -> None:
    root = docs(tmp_path)
    master, slave = pty.openpty()
    env = {**os.environ, "SEDIMENT_EMBEDDER": "hash", "COLUMNS": "120"}
    proc = subprocess.Popen([zygote.script(str(SEDIMENT)),
                             *compile_args(root)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    proc.communicate(timeout=120)
    drawn = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        drawn += data
    os.close(master)
    assert proc.returncode == 0
    text = drawn.decode(errors="replace")
    assert "ETA" in text and "/s" in text, text


def test_every_command_takes_quiet_and_verbose() -> None:
    missing = [" ".join(path) for path, cmd in _walk(cli, ["sediment"])
               if not isinstance(cmd, click.Group)
               and not {"-q", "--quiet", "-v", "--verbose"}
               <= {o for p in cmd.params for o in getattr(p, "opts", [])}]
    assert missing == []
