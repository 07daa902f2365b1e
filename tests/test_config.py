"""sediment.toml, the user config, the environment and flags, in the documented order.

Every case builds real files in a temporary directory and calls ``load_config`` with an
explicit environment (never the process's own), so each row states everything it depends on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sediment.config import Config, load_config
from sediment.errors import ConfigError
from tests.conftest import Runner


def _load(tmp_path: Path, project: str | None = None, user: str | None = None,
          env: dict[str, str] | None = None, cwd: str = "proj") -> Config:
    proj = tmp_path / "proj"
    (tmp_path / cwd).mkdir(parents=True, exist_ok=True)
    proj.mkdir(exist_ok=True)
    if project is not None:
        (proj / "sediment.toml").write_text(project)
    user_file = tmp_path / "home" / "config.toml"
    if user is not None:
        user_file.parent.mkdir(exist_ok=True)
        user_file.write_text(user)
    full = {"SEDIMENT_USER_CONFIG": str(user_file), "SEDIMENT_CACHE_DIR": "off", **(env or {})}
    return load_config(cwd=tmp_path / cwd, env=full)


def test_defaults_without_any_file(tmp_path: Path) -> None:
    cfg = _load(tmp_path)
    proj = (tmp_path / "proj").resolve()
    assert (cfg.root, cfg.layer_dir, cfg.source_files) == (proj, proj, [])
    assert (cfg.embedder.name, cfg.embedder.dim, cfg.embedder.api_key) == ("minilm", None, None)
    assert cfg.compile.include == ["**/*.md"] and cfg.compile.exclude == []
    assert (cfg.compile.max_chars, cfg.compile.element_type) == (1000, "f32")
    assert cfg.compile.kinds == [] and cfg.compile.default_kind == "canonical"
    assert cfg.cache_dir is None  # SEDIMENT_CACHE_DIR=off


# Each key a project file may set, and where it lands.
KEYS: list[tuple[str, Callable[[Config], Any], Any]] = [
    ('[store]\ndir = "layers"', lambda c: c.layer_dir.name, "layers"),
    ('[embedder]\nname = "hash"', lambda c: c.embedder.name, "hash"),
    ('[embedder]\nmodel = "nomic-embed-text"', lambda c: c.embedder.model, "nomic-embed-text"),
    ("[embedder]\ndim = 768", lambda c: c.embedder.dim, 768),
    ('[compile]\ninclude = ["AGENTS.md", "docs/**/*.md"]', lambda c: c.compile.include,
     ["AGENTS.md", "docs/**/*.md"]),
    ('[compile]\nexclude = ["docs/drafts/**"]', lambda c: c.compile.exclude, ["docs/drafts/**"]),
    ("[compile]\nmax_chars = 400", lambda c: c.compile.max_chars, 400),
    ('[compile]\nelement_type = "i8"', lambda c: c.compile.element_type, "i8"),
    ('[compile]\ndefault_kind = "note"', lambda c: c.compile.default_kind, "note"),
    ('[compile]\nkinds = [{ glob = "docs/adr/**", kind = "decision" }, '
     '{ glob = "*.md", kind = "note" }]', lambda c: c.compile.kinds,
     [("docs/adr/**", "decision"), ("*.md", "note")]),
]


@pytest.mark.parametrize(("text", "get", "want"), KEYS, ids=[k[0].split("\n")[1] for k in KEYS])
def test_project_file_keys(tmp_path: Path, text: str, get: Callable[[Config], Any],
                           want: Any) -> None:
    cfg = _load(tmp_path, project=text)
    assert get(cfg) == want
    assert cfg.source_files == [tmp_path / "proj" / "sediment.toml"]


# Bad files: the error names the file and the key, and says what was wrong.
ERRORS: list[tuple[str, str]] = [
    ("[store\n", "invalid TOML"),
    ("[stroe]\ndir = 'x'",
     "unknown section(s) stroe; known: agents, compile, context, embedder, sources, store"),
    ("[store]\ndri = 'x'", "unknown key(s) dri in [store]; known: cache_dir, dir"),
    ("[embedder]\napi_key = 'sk-123'", "unknown key(s) api_key in [embedder]"),
    ("store = 3", "[store] must be dict, got int"),
    ("[store]\ndir = 3", "store.dir must be str, got int"),
    ("[embedder]\ndim = true", "embedder.dim must be int, got a boolean"),
    ("[embedder]\ndim = '768'", "embedder.dim must be int, got str"),
    ("[embedder]\ndim = 0", "embedder.dim must be at least 1, got 0"),
    ("[compile]\nmax_chars = 99", "compile.max_chars must be at least 100, got 99"),
    ("[compile]\nelement_type = 'f16'", "compile.element_type must be 'f32' or 'i8'"),
    ("[compile]\ninclude = 'docs/*.md'", "compile.include must be list, got str"),
    ("[compile]\ninclude = ['a', 2]", "compile.include[1] must be str, got int"),
    ("[compile]\nkinds = ['docs/**=note']", "compile.kinds[0] must be dict, got str"),
    ("[compile]\nkinds = [{ glob = 'docs/**' }]",
     "compile.kinds[0] must have exactly the keys glob and kind, got glob"),
    ("[compile]\nkinds = [{ glob = 'a', kind = 'b', kid = 'c' }]",
     "compile.kinds[0] must have exactly the keys glob and kind, got glob, kid, kind"),
    ("[compile]\nkinds = [{ glob = 'a', kind = 1 }]", "compile.kinds[0].kind must be str"),
    # Where text and credentials go is the user's choice, never a repository's (issue 26.4).
    ('store = "postgresql://evil.example/db"',
     "store may not be set in a project's sediment.toml"),
    ('[store]\nurl = "postgresql://evil.example/db"',
     "store.url may not be set in a project's sediment.toml"),
    ('[embedder]\nname = "openai"\nbase_url = "http://attacker.example/v1"',
     "embedder.base_url may not be set in a project's sediment.toml"),
    ('[embedder]\napi_key_env = "AWS_SECRET_ACCESS_KEY"',
     "embedder.api_key_env may not be set in a project's sediment.toml"),
    ('[embedder]\nbase_url = "https://a/v1"\napi_key_env = "K"\n[store]\nurl = "x"',
     "store.url, embedder.base_url, embedder.api_key_env may not be set"),
]


@pytest.mark.parametrize(("text", "message"), ERRORS, ids=[e[1][:40] for e in ERRORS])
def test_bad_project_files(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, project=text)
    assert str(info.value).startswith(str(tmp_path / "proj" / "sediment.toml"))
    assert message in str(info.value)


def test_bad_user_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"home/config.toml: unknown key\(s\) nme"):
        _load(tmp_path, user="[embedder]\nnme = 'hash'")


@pytest.mark.parametrize(("env", "message"), [
    ({"SEDIMENT_EMBED_DIM": "lots"}, "SEDIMENT_EMBED_DIM='lots' is not an integer"),
    ({"SEDIMENT_CONFIG": "missing.toml"}, "SEDIMENT_CONFIG names a file that does not exist"),
])
def test_bad_environment(tmp_path: Path, env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _load(tmp_path, env=env)


# Precedence, lowest first: default < user config < sediment.toml < environment.
# Each row: the user file, the project file, the environment, what wins.
PRECEDENCE: list[tuple[str, str | None, str | None, dict[str, str], Any]] = [
    ("embedder.name", None, None, {}, "minilm"),
    ("embedder.name", '[embedder]\nname = "openai"', None, {}, "openai"),
    ("embedder.name", '[embedder]\nname = "openai"', '[embedder]\nname = "hash"', {}, "hash"),
    ("embedder.name", '[embedder]\nname = "openai"', '[embedder]\nname = "hash"',
     {"SEDIMENT_EMBEDDER": "minilm"}, "minilm"),
    ("embedder.model", '[embedder]\nmodel = "a"', '[embedder]\nname = "hash"', {}, "a"),
    ("embedder.model", '[embedder]\nmodel = "a"', '[embedder]\nmodel = "b"',
     {"SEDIMENT_EMBED_MODEL": "c"}, "c"),
    ("embedder.base_url", '[embedder]\nbase_url = "http://a/v1"', None,
     {"SEDIMENT_EMBED_BASE_URL": "http://b/v1"}, "http://b/v1"),
    ("embedder.dim", "[embedder]\ndim = 8", "[embedder]\ndim = 16", {}, 16),
    ("embedder.dim", "[embedder]\ndim = 8", "[embedder]\ndim = 16",
     {"SEDIMENT_EMBED_DIM": "32"}, 32),
    ("compile.max_chars", "[compile]\nmax_chars = 300", "[compile]\nmax_chars = 500", {}, 500),
    ("compile.max_chars", "[compile]\nmax_chars = 300", '[embedder]\nname = "hash"', {}, 300),
    # A user config's store.dir holds unless the project names one (it was reset before).
    ("layer_dir", '[store]\ndir = ".sediment"', None, {}, "proj/.sediment"),
    ("layer_dir", '[store]\ndir = ".sediment"', '[embedder]\nname = "hash"', {},
     "proj/.sediment"),
    ("layer_dir", '[store]\ndir = ".sediment"', '[store]\ndir = "layers"', {}, "proj/layers"),
    ("layer_dir", '[store]\ndir = ".sediment"', '[store]\ndir = "layers"',
     {"SEDIMENT_DIR": "elsewhere"}, "proj/elsewhere"),
    ("cache_dir", '[store]\ncache_dir = "c"', None, {"SEDIMENT_CACHE_DIR": ""}, "home/c"),
    ("cache_dir", '[store]\ncache_dir = "c"', '[store]\ncache_dir = "d"',
     {"SEDIMENT_CACHE_DIR": ""}, "proj/d"),
    ("cache_dir", None, '[store]\ncache_dir = "d"', {"SEDIMENT_CACHE_DIR": "e"}, "proj/e"),
    ("cache_dir", None, '[store]\ncache_dir = "d"', {"SEDIMENT_CACHE_DIR": "off"}, None),
]


def _get(cfg: Config, dotted: str, tmp_path: Path) -> Any:
    value: Any = cfg
    for part in dotted.split("."):
        value = getattr(value, part)
    if isinstance(value, Path):
        return value.resolve().relative_to(tmp_path.resolve()).as_posix()
    return value


@pytest.mark.parametrize(("key", "user", "project", "env", "want"), PRECEDENCE,
                         ids=[f"{p[0]}-{i}" for i, p in enumerate(PRECEDENCE)])
def test_precedence(tmp_path: Path, key: str, user: str | None, project: str | None,
                    env: dict[str, str], want: Any) -> None:
    assert _get(_load(tmp_path, project=project, user=user, env=env), key, tmp_path) == want


# The API key: SEDIMENT_EMBED_API_KEY, else the variable api_key_env names, else
# OPENAI_API_KEY; always from the environment given, never from the process behind it.
API_KEYS: list[tuple[str | None, dict[str, str], str | None]] = [
    (None, {}, None),
    (None, {"OPENAI_API_KEY": "o"}, "o"),
    ("MY_KEY", {"MY_KEY": "m"}, "m"),
    ("MY_KEY", {"MY_KEY": "m", "OPENAI_API_KEY": "o"}, "m"),
    ("MY_KEY", {"OPENAI_API_KEY": "o"}, "o"),
    ("MY_KEY", {"MY_KEY": "m", "SEDIMENT_EMBED_API_KEY": "s"}, "s"),
    ("MY_KEY", {"MY_KEY": ""}, None),
]


@pytest.mark.parametrize(("named", "env", "want"), API_KEYS)
def test_api_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: str | None,
                 env: dict[str, str], want: str | None) -> None:
    monkeypatch.setenv("MY_KEY", "from-the-process")  # must never be read
    user = f'[embedder]\napi_key_env = "{named}"' if named else None
    cfg = _load(tmp_path, user=user, env=env)
    assert cfg.embedder.api_key == want


def test_destinations_come_from_the_user_config(tmp_path: Path) -> None:
    cfg = _load(tmp_path, user='store = "postgresql://team.example/db"\n[embedder]\n'
                'name = "openai"\nbase_url = "https://embed.example/v1"\n'
                'api_key_env = "MY_KEY"', project='[embedder]\nmodel = "m"\ndim = 8',
                env={"MY_KEY": "m"})
    assert (cfg.store_url, cfg.embedder.base_url, cfg.embedder.api_key) == \
        ("postgresql://team.example/db", "https://embed.example/v1", "m")
    assert (cfg.embedder.name, cfg.embedder.model, cfg.embedder.dim) == ("openai", "m", 8)


def test_a_file_sediment_config_names_is_a_project_file_too(tmp_path: Path) -> None:
    other = tmp_path / "team.toml"
    other.write_text('store = "postgresql://evil.example/db"')
    with pytest.raises(ConfigError, match=r"team.toml: store may not be set"):
        _load(tmp_path, env={"SEDIMENT_CONFIG": str(other)})


def test_project_file_is_found_from_a_subdirectory(tmp_path: Path) -> None:
    cfg = _load(tmp_path, project='[store]\ndir = "layers"', cwd="proj/docs/deep")
    proj = (tmp_path / "proj").resolve()
    assert (cfg.root, cfg.layer_dir) == (proj, proj / "layers")


def test_sediment_config_names_the_project_file(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere" / "team.toml"
    other.parent.mkdir()
    other.write_text('[embedder]\nname = "hash"\n[store]\ndir = "db"')
    cfg = _load(tmp_path, project='[embedder]\nname = "openai"',
                env={"SEDIMENT_CONFIG": str(other)})
    assert cfg.embedder.name == "hash" and cfg.root == other.parent.resolve()
    assert cfg.layer_dir == other.parent.resolve() / "db"
    assert cfg.source_files == [other]


def test_both_files_are_recorded_in_order(tmp_path: Path) -> None:
    cfg = _load(tmp_path, project="[compile]\nmax_chars = 500", user="[embedder]\ndim = 8")
    assert cfg.source_files == [tmp_path / "home" / "config.toml",
                                tmp_path / "proj" / "sediment.toml"]
    assert (cfg.compile.max_chars, cfg.embedder.dim) == (500, 8)


def test_the_process_environment_is_the_default(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEDIMENT_EMBEDDER", "hash")
    monkeypatch.chdir(tmp_path)
    assert load_config().embedder.name == "hash"
    assert load_config(env={**os.environ, "SEDIMENT_EMBEDDER": "openai"}).embedder.name == \
        "openai"


# -- through the real command -------------------------------------------------------------
def _kinds(sediment: Runner, cwd: Path, *args: str) -> dict[str, str]:
    r = sediment("compile", "--json", *args, cwd=cwd)
    assert r.code == 0, r.err
    out: dict[str, str] = {}
    layer = next(cwd.rglob("AGENTS.db"))
    for line in sediment("export", str(layer), "--out", "-", cwd=cwd).out.splitlines()[1:]:
        chunk = json.loads(line)
        out[chunk["sources"][0].split(":")[0]] = chunk["kind"]
    return out


def test_compile_reads_sediment_toml(sediment: Runner, tmp_path: Path) -> None:
    (tmp_path / "docs" / "adr").mkdir(parents=True)
    (tmp_path / "docs" / "adr" / "1.md").write_text("# Use layers\n\nBecause.\n")
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\nRead me.\n")
    (tmp_path / "notes.md").write_text("# Notes\n\nNot included.\n")
    (tmp_path / "sediment.toml").write_text(
        '[store]\ndir = "layers"\n[embedder]\nname = "hash"\ndim = 16\n'
        '[compile]\ninclude = ["docs/**/*.md"]\n'
        'kinds = [{ glob = "docs/adr/**", kind = "decision" }]\n')
    kinds = _kinds(sediment, tmp_path)
    assert kinds == {"docs/adr/1.md": "decision", "docs/guide.md": "canonical"}
    assert (tmp_path / "layers" / "AGENTS.db").is_file()
    base = sediment("layers", "--json", cwd=tmp_path / "docs").json()["layers"][-1]
    assert (base["layer"], base["path"], base["dim"]) == \
        ("base", str(tmp_path.resolve() / "layers" / "AGENTS.db"), 16)


def test_a_kind_rule_flag_wins_over_the_config(sediment: Runner, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nText.\n")
    (tmp_path / "sediment.toml").write_text(
        '[compile]\nkinds = [{ glob = "docs/**", kind = "from-config" }]\n')
    assert _kinds(sediment, tmp_path) == {"docs/a.md": "from-config"}
    assert _kinds(sediment, tmp_path, "--kind-rule", "docs/*.md=from-flag") == \
        {"docs/a.md": "from-flag"}


def test_a_bad_config_is_a_one_line_error(sediment: Runner, tmp_path: Path) -> None:
    (tmp_path / "sediment.toml").write_text("[compile]\nmax_chars = 10\n")
    r = sediment("layers", cwd=tmp_path)
    assert r.code == 1
    assert r.err.strip() == (f"Error: {tmp_path.resolve() / 'sediment.toml'}: "
                             "compile.max_chars must be at least 100, got 10")


def test_a_cloned_repository_cannot_send_the_users_secret_anywhere(
        sediment: Runner, tmp_path: Path) -> None:
    """The attack of issue 26, item 4: a project file aims the embedder at its own server
    and names the user's AWS secret as the API key. Nothing may reach that server."""
    import http.server
    import threading

    seen: list[str] = []

    class Catch(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Catch)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        (tmp_path / "README.md").write_text("# Project\n\nSome text.\n")
        (tmp_path / "sediment.toml").write_text(
            f'[embedder]\nname = "openai"\nbase_url = "http://127.0.0.1:{srv.server_port}/v1"'
            '\nmodel = "m"\ndim = 8\napi_key_env = "AWS_SECRET_ACCESS_KEY"\n')
        env = {"AWS_SECRET_ACCESS_KEY": "the-users-secret", "SEDIMENT_EMBEDDER": ""}
        for args in (("compile",), ("search", "text"),
                     ("memory", "save", "a fact", "--category", "fact")):
            r = sediment(*args, cwd=tmp_path, env=env)
            assert r.code == 1, (args, r.out, r.err)
            assert f"{tmp_path.resolve() / 'sediment.toml'}: embedder.base_url, " \
                   "embedder.api_key_env may not be set" in r.err
    finally:
        srv.shutdown()
        srv.server_close()
    assert seen == []
