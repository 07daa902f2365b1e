"""``sediment init``: a commented sediment.toml, a .gitignore block, and the MCP client
configuration for this project."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import click

from sediment.cli._app import cli
from sediment.cli._options import json_option
from sediment.cli._output import emit_json, visible
from sediment.config import PROJECT_FILE
from sediment.errors import ValidationError
from sediment.ops.gitmerge import ATTRIBUTES, GitSetup, install
from sediment.store.atomic import atomic_write, rewrite_text
from sediment.store.layerset import LOCK_FILE

BEGIN = "# >>> sediment (managed by `sediment init`)"
END = "# <<< sediment"

IGNORED = [
    "# Commit AGENTS.db, AGENTS.user.db, AGENTS.delta.db and their .sig files.",
    "# Not these: the machine-local layer, lock files, temporaries, derived indexes, caches.",
    "AGENTS.local.db",
    LOCK_FILE,
    ".AGENTS*.lock",
    ".AGENTS*.tmp",
    ".AGENTS*.faiss",
    ".AGENTS*.lex",
    ".AGENTS*.sync.json",
    ".sediment/",
]

TOML = """\
# Sediment configuration for this project (every setting is optional; the values shown
# commented out are the defaults). Precedence: this file < environment < command line.

[store]
# Directory of the layer files AGENTS.db, AGENTS.user.db, AGENTS.delta.db, AGENTS.local.db.
# dir = "."
# Embedding cache (default: the user's cache directory).
# cache_dir = ".sediment/cache"

[embedder]
# minilm (offline, default), hash (offline, for tests) or openai (any OpenAI-compatible
# /v1/embeddings server). Unset, a search uses the offline embedder the layers record.
# name = "minilm"
# model = "nomic-embed-text"
# dim = 768
# Where texts and keys are sent (base_url, api_key_env) and a team store's URL are yours to
# choose, not the repository's: set them in your user config or the environment
# (SEDIMENT_EMBED_BASE_URL, SEDIMENT_STORE); this file may not (docs/configuration.md).

[compile]
# include = ["**/*.md"]
# exclude = ["build/**"]
# max_chars = 1000
# default_kind = "canonical"
# element_type = "f32"
# kinds = [{ glob = "docs/adr/**", kind = "decision" }]
"""


def gitignore_text(existing: str) -> str:
    """``existing`` with Sediment's block added, or replaced where it already is."""
    block = "\n".join([BEGIN, *IGNORED, END]) + "\n"
    lines = existing.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.rstrip("\n") == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\n") == END]
    if starts and ends and ends[-1] > starts[0]:
        return "".join(lines[:starts[0]]) + block + "".join(lines[ends[-1] + 1:])
    sep = "" if not existing or existing.endswith("\n\n") else \
        ("\n" if existing.endswith("\n") else "\n\n")
    return existing + sep + block


def mcp_config(layer_dir: Path) -> dict[str, object]:
    """What an MCP client (Claude Desktop, Cursor, VS Code...) needs to start the server."""
    command = shutil.which("sediment") or str(Path(sys.argv[0]).resolve())
    return {"mcpServers": {"sediment": {
        "command": command, "args": ["serve", "--dir", str(layer_dir.resolve())]}}}


@cli.command(name="init")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."),
              help="Project directory to set up (default: the current one).")
@click.option("--force", is_flag=True, help="Replace an existing sediment.toml.")
@click.option("--git", "with_git", is_flag=True,
              help="Also install the merge driver for the layer files: .gitattributes, "
                   "and the git config lines (written in a git repository, else printed).")
@json_option
def init_cmd(root: Path, force: bool, with_git: bool, as_json: bool) -> None:
    """Set up a project: a commented sediment.toml, a .gitignore block for the files not to
    commit (local layer, lock files, temporaries, indexes, caches), and the MCP client
    configuration to paste into your agent. Running it again updates the block."""
    if not root.is_dir():
        raise ValidationError(f"--root {root}: no such directory")
    toml = root / PROJECT_FILE
    wrote_toml = force or not toml.exists()
    if wrote_toml:
        atomic_write(toml, TOML.encode("utf-8"))
    ignore = root / ".gitignore"
    _, ignore_changed = rewrite_text(ignore, gitignore_text)
    config = mcp_config(root)
    git = install(root) if with_git else None
    if as_json:
        emit_json({"config": str(toml), "config_written": wrote_toml,
                   "gitignore": str(ignore), "gitignore_changed": ignore_changed,
                   "mcp": config, **({"git": _git_json(git)} if git is not None else {})})
        return
    click.echo(f"{'wrote' if wrote_toml else 'kept'} {visible(str(toml))}"
               + ("" if wrote_toml else " (--force replaces it)"))
    click.echo(f"{'updated' if ignore_changed else 'kept'} {visible(str(ignore))}: ignores "
               + ", ".join(x for x in IGNORED if not x.startswith("#")))
    click.echo("\nMCP client configuration (for example in .mcp.json, or Claude Desktop's "
               "claude_desktop_config.json):\n")
    click.echo(json.dumps(config, indent=2))
    if git is not None:
        _echo_git(git)
    click.echo("\nThen: sediment compile, and sediment search \"your question\".")


def _git_json(git: GitSetup) -> dict[str, object]:
    return {"attributes": str(git.attributes), "attributes_changed": git.attributes_changed,
            "config": dict(git.config), "config_written": git.config_written}


def _echo_git(git: GitSetup) -> None:
    click.echo(f"{'updated' if git.attributes_changed else 'kept'} "
               f"{visible(str(git.attributes))}: " + "; ".join(ATTRIBUTES))
    if git.config_written:
        click.echo("wrote the merge driver to this repository's git config:")
    else:
        click.echo("not in a git repository; run these in it to install the merge driver:")
    for key, value in git.config:
        click.echo(f"  git config {key} {shlex.quote(value)}")
