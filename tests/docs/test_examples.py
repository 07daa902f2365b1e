"""Every shell example in README.md and docs/ runs, so the docs cannot drift from the commands.

How a page is run (what whoever writes docs needs to know):

- A fenced block whose info string starts with ``sh``, ``bash`` or ``shell`` is run by bash
  with ``set -euo pipefail``. A page's blocks run in order, in one fresh directory holding a
  copy of ``tests/docs/sample/`` (a small project: AGENTS.md, docs/, src/), with the real
  ``sediment`` command on PATH and the hash embedder (``SEDIMENT_EMBEDDER=hash``), so a page
  reads as one session: what one block writes, the next can search.
- "The real command": README.md and docs/getting-started.md (``REAL_SCRIPT``: the quickstart
  and the install page, what a user runs first) run the installed console script, a Python
  per command. The other pages' shells find first on PATH a launcher (tests/zygote.py,
  ``launcher``) that has the test worker's zygote fork the console script's entry point
  (``sys.exit(main())``) in a process of its own, with the shell's argv, cwd, whole
  environment and its stdin, stdout and stderr, and exits with its status: the same command
  in all but the interpreter's start-up, which is most of its cost (about 0.15 s a command
  instead of 1 s). A command whose environment changes what acts at start-up (``PYTHON*``,
  locale, loader variables), and every command under ``SEDIMENT_TEST_FORK=0``, runs the
  installed script; tests/docs/test_launcher.py compares the two.
- A block that cannot run in a test (a server that runs until stopped, a command that needs
  a network service, another program or a key) says so in its info string: ```` ```sh no-run ````.
  Keep them few: ``test_no_run_blocks_are_few`` lists them.
- Pages written by programs (``GENERATED``) hold benchmark commands that take minutes; they
  are kept current by the programs that write them, not here.
- What a page needs that no command of ours gives (a proposal an agent made over MCP) is made
  by ``SETUP`` before its first block.

A failure names the file and line of the failing command, its exit code and its output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import zygote
from tests.conftest import REPO

SAMPLE = Path(__file__).with_name("sample")
BIN = Path(sys.executable).parent
SHELLS = {"sh", "bash", "shell"}
NO_RUN = "no-run"
MAX_NO_RUN = 12
BLOCK_TIMEOUT = 120
GENERATED = {
    "docs/cli.md": "./run docs (tests/cli/test_reference.py)",
    "docs/benchmarks.md": "./run bench",
    "docs/quality.md": "./run bench-quality",
    "docs/peers.md": "./run bench-peers",
    "docs/mcp.md": "./run bench-mcp",
}
"""Pages a program writes, and the program."""
REAL_SCRIPT = {"README.md", "docs/getting-started.md"}
"""The quickstart and the install page: what a user runs first runs the installed script
itself, each command its own Python, not through the launcher (see the module docstring)."""


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    info: str
    text: str

    @property
    def language(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def runs(self) -> bool:
        return self.language in SHELLS and NO_RUN not in self.info.split()[1:]


def pages() -> list[str]:
    found = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [p.relative_to(REPO).as_posix() for p in found]


_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def blocks(page: str) -> Iterator[Block]:
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        fence, start, body = m["fence"], i, []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence)
                                      and lines[i].strip().strip(fence[0]) == ""):
            body.append(lines[i])
            i += 1
        i += 1
        yield Block(page, start + 1, m["info"].strip(), "\n".join(body) + "\n")


def _propose_two(cwd: Path, run: Callable[[str], None]) -> None:
    """Two agent notes proposed for promotion, as `agents_context_propose` would record them.

    Written chunks take ids from 2^31 up (docs/architecture.md#ids), so the sample's first
    two writes are 2147483648 and 2147483650 (each followed by the event recording its
    actor), and their proposals the next two ids."""
    run("sediment write --scope local --kind derived-summary --confidence 0.7 --author mcp "
        "--content 'Billing retries back off 30 s after a 429.' --source src/billing.py:88")
    run("sediment write --scope local --kind note --confidence 0.4 --author mcp "
        "--content 'Deploys happen on Fridays.' --source docs/deploy.md:5")
    run("sediment propose 2147483648")
    run("sediment propose 2147483650")


SETUP: dict[str, Callable[[Path, Callable[[str], None]], None]] = {
    "docs/review.md": _propose_two,
}


def _env(home: Path, page: str) -> dict[str, str]:
    env = dict(os.environ)
    path = [str(BIN)]
    if page not in REAL_SCRIPT and env.get(zygote.OPT_OUT) != "0":
        path.insert(0, zygote.launcher(str(BIN / "sediment")))
    env.update(PATH=os.pathsep.join([*path, env.get("PATH", "")]), SEDIMENT_EMBEDDER="hash",
               HOME=str(home), NO_COLOR="1", COLUMNS="120")
    return env


def _run(block: Block, cwd: Path, env: dict[str, str]) -> None:
    head = "set -euo pipefail\ntrap 'echo \"@@line $LINENO\" >&2' ERR\n"
    try:
        p = subprocess.run(["bash", "-c", head + block.text], cwd=cwd, env=env, text=True,
                           capture_output=True, timeout=BLOCK_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.page}:{block.line}: the block ran for more than {BLOCK_TIMEOUT} s; "
                    "a server or a benchmark belongs in a `sh no-run` block (or the page in "
                    "GENERATED)", pytrace=False)
    if p.returncode == 0:
        return
    m = re.search(r"@@line (\d+)", p.stderr)
    offset = int(m[1]) - 2 if m else 1
    line = block.line + offset
    command = block.text.splitlines()[offset - 1] if 0 < offset <= len(
        block.text.splitlines()) else block.text
    err = re.sub(r"@@line \d+\n?", "", p.stderr)
    pytest.fail(f"{block.page}:{line}: `{command.strip()}` exited {p.returncode} "
                f"(block at line {block.line}; run in a copy of tests/docs/sample)\n"
                f"--- stdout\n{p.stdout[-3000:]}--- stderr\n{err[-3000:]}", pytrace=False)


RUNNABLE = [p for p in pages() if p not in GENERATED and any(b.runs for b in blocks(p))]


@pytest.mark.parametrize("page", RUNNABLE)
def test_shell_examples_run(page: str, tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    shutil.copytree(SAMPLE, cwd)
    env = _env(tmp_path, page)

    def run(command: str) -> None:
        _run(Block(f"SETUP of {page}", 0, "sh", command + "\n"), cwd, env)

    run("sediment compile")
    if page in SETUP:
        SETUP[page](cwd, run)
    for block in blocks(page):
        if block.runs:
            _run(block, cwd, env)


def test_no_run_blocks_are_few() -> None:
    skipped = [f"{b.page}:{b.line}" for p in pages() if p not in GENERATED for b in blocks(p)
               if b.language in SHELLS and not b.runs]
    assert len(skipped) <= MAX_NO_RUN, f"{len(skipped)} shell blocks marked no-run: {skipped}"


def test_every_block_says_its_language() -> None:
    bare = [f"{b.page}:{b.line}" for p in pages() if p not in GENERATED for b in blocks(p)
            if not b.language]
    assert not bare, ("fenced blocks without a language (say sh, toml, json, text, ...; "
                      f"sh blocks are run by this test): {bare}")


def test_generated_pages_exist() -> None:
    missing = [p for p in GENERATED if not (REPO / p).is_file()]
    assert not missing, f"GENERATED names pages that do not exist: {missing}"


# -- links --------------------------------------------------------------------------------
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    out: set[str] = set()
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            out.add(_slug(line.lstrip("#")))
    return out


@pytest.mark.parametrize("page", pages())
def test_links_stay_in_the_repository_and_resolve(page: str) -> None:
    source = REPO / page
    bad = []
    text = source.read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), 1):
        for m in _LINK.finditer(line):
            target = m["target"]
            if re.match(r"[a-z]+:", target):
                continue  # an address outside: allowed (the RFC's public home, say)
            path_part, _, anchor = target.partition("#")
            resolved = (source.parent / path_part).resolve() if path_part else source
            if not resolved.is_relative_to(REPO.resolve()):
                bad.append(f"{page}:{number}: {target} leaves the repository")
            elif not resolved.exists():
                bad.append(f"{page}:{number}: {target} does not exist")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                bad.append(f"{page}:{number}: {target}: no heading #{anchor}")
    assert not bad, "\n".join(bad)


def test_readme_is_a_map() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; keep it a map (<= 150)"


# -- tests the docs name ----------------------------------------------------------------
_TEST_REF = re.compile(r"`(?P<file>tests/[\w/]+\.py)::(?P<name>test_\w+)`")


@pytest.mark.parametrize("page", pages())
def test_named_tests_exist(page: str) -> None:
    """A page that cites `tests/x.py::test_y` as proof must cite a test that exists."""
    missing = []
    for number, line in enumerate((REPO / page).read_text(encoding="utf-8").splitlines(), 1):
        for m in _TEST_REF.finditer(line):
            path = REPO / m["file"]
            defined = path.is_file() and re.search(
                rf"^(async )?def {m['name']}\(", path.read_text(encoding="utf-8"), re.M)
            if not defined:
                missing.append(f"{page}:{number}: {m['file']}::{m['name']}")
    assert not missing, "tests named in the docs that do not exist:\n" + "\n".join(missing)


def test_configuration_examples_load(tmp_path: Path) -> None:
    """Every TOML block of docs/configuration.md is a sediment.toml that load_config accepts."""
    from sediment.config import load_config

    found = [b for b in blocks("docs/configuration.md") if b.language == "toml"]
    assert found
    for block in found:
        (tmp_path / "sediment.toml").write_text(block.text)
        try:
            load_config(cwd=tmp_path, env={"SEDIMENT_USER_CONFIG": str(tmp_path / "none")})
        except Exception as exc:  # the message names the key; add where the block is
            pytest.fail(f"docs/configuration.md:{block.line}: {exc}", pytrace=False)
