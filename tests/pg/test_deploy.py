"""The deployment files of docs/deploy parse, and the commands they run are commands
Sediment accepts (their options are parsed by the real command line)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click
import yaml

from sediment.cli import cli
from tests.conftest import REPO

DEPLOY = REPO / "docs" / "deploy"


def _accepts(args: list[str]) -> None:
    cli.list_commands(click.Context(cli))  # the commands are registered when first needed
    group = cli
    while isinstance(group, click.Group) and args and args[0] in group.commands:
        group, args = group.commands[args[0]], args[1:]
    assert not isinstance(group, click.Group), args
    group.make_context(group.name or "", list(args))


def test_compose_runs_postgres_with_pgvector_migrate_server_and_proxy() -> None:
    doc = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = doc["services"]
    assert set(services) == {"db", "migrate", "sediment", "caddy"}
    assert "pgvector" in services["db"]["image"]
    assert services["migrate"]["command"] == ["db", "migrate"]
    for name in ("migrate", "sediment"):
        _accepts(list(services[name]["command"]))
        build = services[name]["build"]
        assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == \
            (DEPLOY / "Dockerfile").resolve()
    assert services["caddy"]["ports"] and "ports" not in services["sediment"]
    assert "reverse_proxy sediment:8765" in (DEPLOY / "Caddyfile").read_text()


def test_the_systemd_unit_runs_real_commands() -> None:
    lines = (DEPLOY / "sediment-team.service").read_text().splitlines()
    commands = [line.split("=", 1)[1] for line in lines if line.startswith("ExecStart")]
    assert len(commands) == 2
    for command in commands:
        argv = shlex.split(command)
        assert Path(argv[0]).name == "sediment"
        _accepts(argv[1:])
