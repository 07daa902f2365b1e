"""A layer directory, a data directory or a config file that is not what it must be: an
``Error:`` naming the path and exit 1, never "Internal error" (exit 70) from an OSError or
a UnicodeDecodeError."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import Run, Runner


@pytest.fixture
def afile(tmp_path: Path) -> Path:
    path = tmp_path / "afile"
    path.write_text("not a directory\n")
    return path


def _refused(r: Run, *needles: str) -> None:
    assert r.code == 1 and r.err.startswith("Error: ") and "Internal error" not in r.err, r.err
    for needle in needles:
        assert needle in r.err, r.err


def test_a_layer_directory_that_is_a_file(sediment: Runner, tmp_path: Path,
                                          afile: Path) -> None:
    _refused(sediment("search", "deploys", env={"SEDIMENT_DIR": str(afile)}),
             f"{afile} is a file, not a directory")
    project = tmp_path / "project"
    project.mkdir()
    (project / "sediment.toml").write_text(f'[store]\ndir = "{afile}"\n')
    _refused(sediment("search", "deploys", cwd=project), f"{afile} is a file")


def test_a_data_directory_that_is_a_file(sediment: Runner, afile: Path) -> None:
    env = {"SEDIMENT_DATA_DIR": str(afile)}
    _refused(sediment("memory", "save", "--category", "fact", "Deploys are nightly.",
                      env=env), f"{afile} is a file, not a directory")
    _refused(sediment("memory", "list", env=env), f"{afile} is a file")


def test_a_config_file_that_is_not_utf8(sediment: Runner, tmp_path: Path) -> None:
    (tmp_path / "sediment.toml").write_bytes(b'[store]\ndir = "\xff\xfe"\n')
    _refused(sediment("search", "deploys"), "sediment.toml: invalid TOML: not UTF-8",
             "0xff at offset 15")


def test_the_command_line_refuses_a_run_id_mcp_refuses(sediment: Runner) -> None:
    r = sediment("context", "store", "A task.", "--type", "task", "--run", "bad run!")
    assert r.code == 1 and "run_id 'bad run!' must be" in r.err, r.err


def test_a_config_variable_naming_a_directory(sediment: Runner, tmp_path: Path) -> None:
    """SEDIMENT_CONFIG said "a file that does not exist" of a directory, and a
    SEDIMENT_USER_CONFIG naming a directory was ignored without a word."""
    folder = tmp_path / "conf"
    folder.mkdir()
    for variable in ("SEDIMENT_CONFIG", "SEDIMENT_USER_CONFIG"):
        _refused(sediment("search", "deploys", env={variable: str(folder)}),
                 f"{variable} names a directory, not a file")
