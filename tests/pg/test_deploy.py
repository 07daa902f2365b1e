"""The deployment files of docs/deploy parse, and the commands they run are commands
Sediment accepts (their options are parsed by the real command line); the image's build
context leaves out what .dockerignore excludes and keeps what the Dockerfile copies; the
systemd unit's command runs; ``sediment-with-store`` escapes the password it puts in the
URL (issue 30 item 4)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from configparser import ConfigParser
from pathlib import Path

import click
import yaml

from sediment.cli import cli
from sediment.pg import parse_store_url
from tests import zygote
from tests.conftest import REPO

DEPLOY = REPO / "docs" / "deploy"
SEDIMENT = Path(sys.executable).parent / "sediment"


def _accepts(args: list[str]) -> None:
    cli.list_commands(click.Context(cli))  # the commands are registered when first needed
    group = cli
    while isinstance(group, click.Group) and args and args[0] in group.commands:
        group, args = group.commands[args[0]], args[1:]
    assert not isinstance(group, click.Group), args
    group.make_context(group.name or "", list(args))


def _image_paths() -> set[str]:
    """What the Dockerfile puts into the image: the targets of its COPY lines."""
    return {shlex.split(line)[-1] for line in (DEPLOY / "Dockerfile").read_text().splitlines()
            if line.startswith("COPY ")}


def test_compose_runs_postgres_with_pgvector_migrate_server_and_proxy() -> None:
    doc = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = doc["services"]
    assert set(services) == {"db", "migrate", "sediment", "caddy"}
    assert "pgvector" in services["db"]["image"]
    assert services["migrate"]["command"] == ["db", "migrate"]
    for name in ("migrate", "sediment"):
        _accepts(list(services[name]["command"]))
    # one image, built once: only the server builds it, the migration runs the same tag
    built = [name for name, s in services.items() if "build" in s]
    assert built == ["sediment"]
    assert services["migrate"]["image"] == services["sediment"]["image"]
    assert services["migrate"]["pull_policy"] == "never"
    build = services["sediment"]["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == \
        (DEPLOY / "Dockerfile").resolve()
    assert services["caddy"]["ports"] and "ports" not in services["sediment"]
    assert "reverse_proxy sediment:8765" in (DEPLOY / "Caddyfile").read_text()
    # the proxy's X-Forwarded-Proto is trusted, so the page's cookie is Secure
    command = services["sediment"]["command"]
    assert command[command.index("--forwarded-allow-ips") + 1] == "*"
    check = services["sediment"]["healthcheck"]["test"]
    assert check[0] == "CMD" and check[1] in _image_paths()
    assert services["caddy"]["depends_on"]["sediment"]["condition"] == "service_healthy"
    # the documented push of a compiled base is a command the CLI accepts
    text = (DEPLOY / "compose.yaml").read_text()
    push = re.search(r"run --rm \\\n#\s+-v \"\$PWD:/layers\" sediment (push .*)", text)
    assert push is not None
    _accepts(shlex.split(push.group(1)))


def _ignored(patterns: list[str], path: str) -> bool:
    """Whether Docker's .dockerignore rules exclude ``path`` (relative, with /): the last
    matching rule wins, ``!`` re-includes, a matched directory excludes what is under it."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    out = False
    for raw in patterns:
        keep = raw.startswith("!")
        pattern = raw[1:] if keep else raw
        rx = re.escape(pattern.strip("/")).replace(r"\*\*/", "(?:.*/)?") \
            .replace(r"\*\*", ".*").replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        if any(re.fullmatch(rx, p) for p in prefixes):
            out = not keep
    return out


def test_the_build_context_keeps_what_the_image_copies_and_nothing_private() -> None:
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    sources = []
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            sources += shlex.split(line)[1:-1]
    assert sources
    for source in sources:
        assert (REPO / source).exists(), source
        assert not _ignored(patterns, source), source
    needed = [p.relative_to(REPO).as_posix() for p in (REPO / "src").rglob("*")
              if p.is_file() and "__pycache__" not in p.parts]
    assert needed and not [p for p in needed if _ignored(patterns, p)]
    for private in (".git/config", ".venv/bin/python", "build/lib/x.py", "AGENTS.db",
                    "AGENTS.local.db", ".AGENTS.lock", "docs/AGENTS.user.db",
                    "docs/deploy/db_password.txt", "src/sediment/__pycache__/x.pyc"):
        assert _ignored(patterns, private), private


def _unit() -> ConfigParser:
    unit = ConfigParser(strict=False, interpolation=None)
    unit.read_string((DEPLOY / "sediment-team.service").read_text())
    return unit


def test_the_systemd_unit_wants_postgres_limits_restarts_and_runs_from_a_venv() -> None:
    unit = _unit()
    assert "postgresql.service" in unit["Unit"]["Wants"].split()
    assert "postgresql.service" in unit["Unit"]["After"].split()
    assert int(unit["Unit"]["StartLimitBurst"]) > 0
    assert int(unit["Unit"]["StartLimitIntervalSec"]) > 0
    for key in ("ExecStartPre", "ExecStart"):
        argv = shlex.split(unit["Service"][key])
        assert argv[0].endswith("/venv/bin/sediment"), argv[0]
        _accepts(argv[1:])
    # the ExecStart command runs (this checkout's sediment in the unit's venv's place)
    argv = shlex.split(unit["Service"]["ExecStart"])
    done = subprocess.run([zygote.script(str(SEDIMENT)), *argv[1:], "--help"], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "Usage: sediment serve" in done.stdout


def test_sediment_with_store_escapes_the_password(tmp_path: Path) -> None:
    password = "p@ss:w/rd%2F#?&x y"
    (tmp_path / "pw").write_text(password + "\n")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sediment").write_text('#!/bin/sh\nprintf "%s" "$SEDIMENT_STORE"\n')
    (fake / "sediment").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}",
           "SEDIMENT_STORE_PASSWORD_FILE": str(tmp_path / "pw"), "SEDIMENT_PROJECT": "docs"}
    done = subprocess.run([str(DEPLOY / "sediment-with-store"), "serve"], env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    url = parse_store_url(done.stdout)
    assert url.project == "docs"
    import psycopg

    info = psycopg.conninfo.conninfo_to_dict(url.conninfo)
    assert info["password"] == password and info["host"] == "db"
    assert info["user"] == "sediment" and info["dbname"] == "sediment"
