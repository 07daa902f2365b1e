"""The environment is read in one place, sediment.config (its :class:`Environment`
model); everything else receives the values from the adapters that loaded it. A wrong
value is an error naming the variable, before the command does anything."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sediment
from sediment.config import Environment, load_config, places, process_actor, tokens_file
from sediment.errors import ConfigError
from tests.conftest import Runner

SRC = Path(sediment.__file__).parent
ALLOWED: dict[str, str] = {
    "config.py": "the configuration module: the one place that reads the environment",
    "ops/gitmerge.py": "GITHEAD_<commit> variables are git's merge protocol: git sets them "
                       "for the merge it is running, like MERGE_HEAD, not a user's setting",
    "ingest/connectors.py": "builds a git child process's environment (the caller's, with "
                            "prompts turned off): passed on to git, never read as a setting",
}


def _reads_environment(path: Path) -> list[int]:
    """Lines of ``path`` that touch ``os.environ`` or call ``getenv``."""
    names = {"environ", "environb", "getenv", "putenv", "unsetenv"}
    tree = ast.parse(path.read_text(), filename=str(path))
    return [node.lineno for node in ast.walk(tree)
            if (isinstance(node, ast.Attribute) and node.attr in names)
            or (isinstance(node, ast.ImportFrom) and node.module == "os"
                and any(a.name in names for a in node.names))]


def test_only_the_configuration_module_reads_the_environment() -> None:
    found = {str(p.relative_to(SRC)): _reads_environment(p) for p in sorted(SRC.rglob("*.py"))}
    outside = {name: lines for name, lines in found.items() if lines and name not in ALLOWED}
    assert outside == {}, "read the variable in sediment.config (Environment) and pass it down"
    stale = [name for name in ALLOWED if not found.get(name)]
    assert stale == [], "these no longer read the environment: drop them from ALLOWED"


@pytest.mark.parametrize(("env", "message"), [
    ({"SEDIMENT_PROGRESS_SECONDS": "soon"}, "SEDIMENT_PROGRESS_SECONDS='soon' is not a number"),
    ({"SEDIMENT_MEMORY_FLUSH_SECONDS": "1m"},
     "SEDIMENT_MEMORY_FLUSH_SECONDS='1m' is not a number"),
    ({"SEDIMENT_PERSONA_WORKERS": "two"}, "SEDIMENT_PERSONA_WORKERS='two' is not an integer"),
    ({"SEDIMENT_PERSONA_WORKERS": "0"}, "SEDIMENT_PERSONA_WORKERS='0' is not valid"),
    ({"SOURCE_DATE_EPOCH": "yesterday"}, "SOURCE_DATE_EPOCH='yesterday' is not an integer"),
    ({"SEDIMENT_MEMORY_DEDUP": "x"}, "SEDIMENT_MEMORY_DEDUP='x' is not a number"),
])
def test_a_wrong_value_names_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Environment.read(env)


def test_the_values_reach_the_configuration(tmp_path: Path) -> None:
    cfg = load_config(cwd=tmp_path, env={
        "SEDIMENT_USER_CONFIG": str(tmp_path / "none.toml"), "SEDIMENT_CONTEXT_SESSION": "s1",
        "SEDIMENT_PROGRESS_SECONDS": "0.5", "SEDIMENT_MEMORY_FLUSH_SECONDS": "60",
        "SEDIMENT_PERSONA_WORKERS": "3", "SOURCE_DATE_EPOCH": "1700000000",
        "SEDIMENT_OIDC_WEB_CLIENT_SECRET": "s3cret", "SEDIMENT_EMBED_DIM": ""})
    e = cfg.env
    assert (e.context_session, e.progress_seconds, e.memory_flush_seconds, e.persona_workers,
            e.source_date_epoch, e.oidc_web_client_secret, e.embed_dim) == \
        ("s1", 0.5, 60.0, 3, 1700000000, "s3cret", None)
    assert load_config(cwd=tmp_path, env={}).env.context_session == "cli"


def test_the_command_names_the_variable_without_a_traceback(sediment: Runner,
                                                             tmp_path: Path) -> None:
    r = sediment("search", "anything", "--dir", str(tmp_path),
                 env={"SEDIMENT_EMBED_DIM": "lots"})
    assert r.code == ConfigError.exit_code
    assert "environment variable SEDIMENT_EMBED_DIM='lots' is not an integer" in r.err
    assert "Traceback" not in r.err


def test_what_a_workspace_is_handed_comes_from_the_environment(tmp_path: Path) -> None:
    got = places(Environment.read({
        "SEDIMENT_ACTOR": "ada", "SEDIMENT_TOKENS_FILE": str(tmp_path / "t.json"),
        "SEDIMENT_DATA_DIR": str(tmp_path / "data"), "SEDIMENT_MEMORY_DEDUP": "0.8"}),
        session="s1")
    assert (got.actor, got.tokens_file, got.data_dir, got.dedup_threshold, got.session) == \
        ("ada", tmp_path / "t.json", tmp_path / "data", 0.8, "s1")
    beside = Environment.read({"SEDIMENT_USER_CONFIG": str(tmp_path / "u" / "config.toml")})
    assert tokens_file(beside) == tmp_path / "u" / "tokens.json"


def test_the_default_actor_is_the_os_user_made_a_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("getpass.getuser", lambda: ".Jo Doe/admin")
    assert process_actor(Environment.read({})) == "Jo-Doe-admin"
    assert process_actor(Environment.read({"SEDIMENT_ACTOR": "ada"})) == "ada"
    monkeypatch.setattr("getpass.getuser", lambda: "...")
    assert process_actor(Environment.read({})) == "user"
