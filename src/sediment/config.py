"""Configuration: ``sediment.toml`` at the project root, a user config, environment overrides.

Precedence, lowest first: built-in defaults < user config
(``<user config dir>/sediment/config.toml``, or ``SEDIMENT_USER_CONFIG``) < project
``sediment.toml`` (found in the working directory or its parents, or ``SEDIMENT_CONFIG``)
< environment variables < command-line flags. A file sets only the keys it names. Only
adapters read configuration; the library takes explicit arguments.

Relative paths: ``store.dir`` is relative to the project root (the directory of
``sediment.toml``, else the working directory), from either file, so a user config can say
``dir = ".sediment"`` for every project; ``store.cache_dir`` is relative to the file that
names it; so are a ``[[sources]]`` entry's ``root`` and a git source's local ``url``
(docs/sources.md). The API key never sits in a file: ``embedder.api_key_env`` names the
variable that holds it.

Where text and credentials go is the user's choice, never a repository's: ``store`` URLs,
``embedder.base_url`` and ``embedder.api_key_env`` are refused in a project file (the one
found or the one ``SEDIMENT_CONFIG`` names), and read only from the user config, the
environment and flags. There is no per-project trust switch.

Environment variables are the fields of :class:`Environment`, a pydantic-settings model: this
module is the one place that reads them (tests/test_config_sources.py keeps it so), and a
value of the wrong type is a :class:`~sediment.errors.ConfigError` naming the variable.
``SEDIMENT_DIR`` (layer directory), ``SEDIMENT_STORE`` (a PostgreSQL
store URL, as ``--store``), ``SEDIMENT_EMBEDDER``
(minilm | hash | openai), ``SEDIMENT_EMBED_BASE_URL``, ``SEDIMENT_EMBED_MODEL``,
``SEDIMENT_EMBED_DIM``, ``SEDIMENT_EMBED_API_KEY`` (else the variable ``api_key_env``
names, else ``OPENAI_API_KEY``), ``SEDIMENT_CACHE_DIR`` (embedding cache; ``off`` disables
it), ``SEDIMENT_CONFIG`` (an explicit project config file), ``SEDIMENT_USER_CONFIG`` (an
explicit user config file), and the process settings the adapters hand down:
``SEDIMENT_CONTEXT_SESSION``, ``SEDIMENT_PROGRESS_SECONDS``,
``SEDIMENT_OIDC_WEB_CLIENT_SECRET``, ``SEDIMENT_MEMORY_FLUSH_SECONDS``,
``SEDIMENT_PERSONA_WORKERS``, and what :func:`places` hands a workspace:
``SEDIMENT_ACTOR``, ``SEDIMENT_TOKENS_FILE``, ``SEDIMENT_DATA_DIR``,
``SEDIMENT_MEMORY_DEDUP`` (docs/configuration.md lists them all).
"""

from __future__ import annotations

import getpass
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs
from pydantic import Field
from pydantic import ValidationError as PydanticError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from sediment.errors import ConfigError

if TYPE_CHECKING:
    from sediment.context import ContextSettings
    from sediment.workspace import Places

PROJECT_FILE = "sediment.toml"
USER_CONFIG_HINT = "~/.config/sediment/config.toml on Linux, or the file SEDIMENT_USER_CONFIG names"
KEYS: dict[str, frozenset[str]] = {
    "store": frozenset({"dir", "cache_dir", "url"}),
    "embedder": frozenset({"name", "base_url", "model", "dim", "api_key_env"}),
    "compile": frozenset({"include", "exclude", "max_chars", "default_kind", "element_type",
                          "kinds"}),
    "context": frozenset({
        "preset", "persistence", "path", "max_size_mb", "max_items_per_query",
        "min_relevance_score", "context_types", "max_context_tokens", "active_iterations",
        "summarize_after_iterations", "archive_after_iterations", "prune_after_iterations",
        "prune_min_usefulness", "semantic_weight", "recency_weight", "usefulness_weight",
        "type_match_weight", "recency_decay", "skill_recency_decay", "feedback_reach",
        "feedback_similarity", "feedback_gain", "feedback_half_life", "feedback_lift_iterations",
        "skills_across_runs"}),
}
"""Every section and key a config file may hold; anything else is an error, not ignored.
``[agents]`` holds persona tables by name (checked by :mod:`sediment.agents` when loaded)."""

AGENT_KINDS = {"script": "lua", "python": "python"}
"""Sub-tables of ``[agents]`` that hold personas of another source (not a persona name)."""

SOURCE_KEYS: dict[str, frozenset[str]] = {
    "filesystem": frozenset({"name", "type", "root", "include", "exclude", "prefix"}),
    "git": frozenset({"name", "type", "url", "ref", "include", "exclude", "prefix"}),
}
"""Keys of each ``[[sources]]`` entry, by its ``type``."""


class Environment(BaseSettings):
    """Every ``SEDIMENT_*`` variable, typed; an empty variable counts as unset. Read from
    the process's environment, or from the mapping :meth:`read` is given (tests, and a
    caller that hands a child its own)."""

    model_config = SettingsConfigDict(env_prefix="SEDIMENT_", case_sensitive=False,
                                      env_ignore_empty=True, extra="ignore",
                                      frozen=True)

    dir: str | None = None
    store: str | None = None
    embedder: str | None = None
    embed_base_url: str | None = None
    embed_model: str | None = None
    embed_dim: int | None = Field(default=None, ge=1)
    embed_api_key: str | None = None
    cache_dir: str | None = None
    config: str | None = None
    user_config: str | None = None
    context_session: str = "cli"
    """The context session of ``sediment context`` over files (``persistence = "session"``)."""
    progress_seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """How often a long command prints a progress line when its output is not a terminal."""
    oidc_web_client_secret: str | None = None
    """The web page's OIDC client secret (never a flag: it would show in ``ps``)."""
    memory_flush_seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """How often a server writes batched memory use counts (0: only at shutdown)."""
    persona_workers: int | None = Field(default=None, ge=1)
    """Script persona worker processes (default one per CPU, 2 to 8)."""
    source_date_epoch: int | None = Field(default=None, validation_alias="SOURCE_DATE_EPOCH")
    """The reproducible-builds convention, not ours: the time compile gives a file git
    does not date."""
    actor: str | None = None
    """Whom this process acts as (:func:`process_actor`)."""
    tokens_file: str | None = None
    """The actor tokens of a server over layer files (:func:`tokens_file`)."""
    data_dir: str | None = None
    """Where actors' own stores live (:func:`data_dir`)."""
    memory_dedup: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    """The similarity at which a saved memory restates an earlier one."""

    @classmethod
    def settings_customise_sources(
            cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
            *others: PydanticBaseSettingsSource, **named: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the values :meth:`read` gives: no ``.env`` or secrets files, and never
        ``os.environ`` behind the mapping ``read`` was handed (the other sources, passed
        by name, are dropped)."""
        return (init_settings,)

    @classmethod
    def read(cls, env: Mapping[str, str] | None = None) -> Environment:
        """The variables of ``env`` (default: the process's environment). A value of the
        wrong type is a ConfigError naming the variable and the value."""
        source = os.environ if env is None else env
        try:
            return cls(**_MappingSource(cls, source)())
        except PydanticError as exc:
            first = exc.errors()[0]
            field = str(first["loc"][0]).upper()
            name = field if field in _OTHERS else f"SEDIMENT_{field}"
            raise ConfigError(f"environment variable {name}={source.get(name)!r} "
                              f"{_expected(first)}") from None


_OTHERS = frozenset({"SOURCE_DATE_EPOCH"})
"""Variables read that are not Sediment's own (a convention other tools share)."""


class _MappingSource(EnvSettingsSource):
    """The environment source over a given mapping instead of ``os.environ``."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self._given = env
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {k.lower(): v for k, v in self._given.items()
                if (k.startswith("SEDIMENT_") or k in _OTHERS) and v != ""}


def _expected(error: Any) -> str:
    kind = str(error.get("type", ""))
    if kind.startswith("int"):
        return "is not an integer"
    if kind.startswith("float"):
        return "is not a number"
    return f"is not valid: {error.get('msg', kind)}"


@dataclass(slots=True)
class SourceConfig:
    """One ``[[sources]]`` entry; ``root`` (filesystem) and a local ``url`` (git) are
    resolved against the directory of the file that names them."""

    name: str
    type: str
    include: list[str]
    exclude: list[str] = field(default_factory=list)
    root: Path | None = None
    url: str | None = None
    ref: str = "HEAD"
    prefix: str | None = None


@dataclass(slots=True)
class AgentDefinition:
    """One persona table as written: ``source`` is toml, lua or python; ``origin`` is the
    file that defined it (a script's relative ``path`` is relative to its directory)."""

    name: str
    source: str
    table: dict[str, Any]
    origin: Path


@dataclass(slots=True)
class EmbedderConfig:
    name: str = "minilm"
    base_url: str | None = None
    model: str | None = None
    dim: int | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    explicit: bool = False
    """True when a config file or the environment names the embedder; otherwise a search
    may take the offline embedder recorded in the layers' profile."""


@dataclass(slots=True)
class CompileConfig:
    include: list[str] = field(default_factory=lambda: ["**/*.md"])
    exclude: list[str] = field(default_factory=list)
    max_chars: int = 1000
    kinds: list[tuple[str, str]] = field(default_factory=list)
    default_kind: str = "canonical"
    element_type: str = "f32"


@dataclass(slots=True)
class Config:
    root: Path = field(default_factory=Path.cwd)
    layer_dir: Path = field(default_factory=Path.cwd)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    compile: CompileConfig = field(default_factory=CompileConfig)
    sources: list[SourceConfig] = field(default_factory=list)
    cache_dir: Path | None = None
    source_files: list[Path] = field(default_factory=list)
    context: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Each file's raw ``[context]`` table with its source, lowest precedence first; values
    are checked by ``sediment.context.settings.resolve`` (docs/context.md)."""
    agents: dict[str, AgentDefinition] = field(default_factory=dict)
    store_url: str | None = None
    """A PostgreSQL store (``store = "postgresql://..."`` or ``[store] url``); None: the
    layer files of ``layer_dir``. Resolved with ``--store`` by :func:`store_url`."""
    env: Environment = field(default_factory=lambda: Environment.read({}))
    """The environment variables this configuration was read with (the process settings
    the adapters hand down come from here)."""


def _find_project_file(start: Path) -> Path | None:
    for d in (start, *start.parents):
        candidate = d / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:  # tomllib reads bytes; TOML is UTF-8
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 text (byte "
                          f"0x{exc.object[exc.start]:02x} at offset {exc.start})") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc


def _expect(value: Any, typ: type | tuple[type, ...], where: str) -> Any:
    if isinstance(value, bool) and typ is not bool:
        raise ConfigError(f"{where} must be {getattr(typ, '__name__', typ)}, got a boolean")
    if not isinstance(value, typ):
        name = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise ConfigError(f"{where} must be {name}, got {type(value).__name__}")
    return value


def _str_list(value: Any, where: str) -> list[str]:
    _expect(value, list, where)
    for i, v in enumerate(value):
        _expect(v, str, f"{where}[{i}]")
    return list(value)


def _section(data: Mapping[str, Any], name: str, source: Path) -> dict[str, Any]:
    section: dict[str, Any] = _expect(data.get(name, {}), dict, f"{source}: [{name}]")
    unknown = set(section) - KEYS[name]
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(sorted(unknown))} in "
                          f"[{name}]; known: {', '.join(sorted(KEYS[name]))}")
    return section


def _sources(value: Any, compile_: CompileConfig, source: Path) -> list[SourceConfig]:
    where = f"{source}: sources"
    _expect(value, list, f"{where} (an array of tables, [[sources]])")
    out = []
    for i, entry in enumerate(value):
        at = f"{where}[{i}]"
        _expect(entry, dict, at)
        kind = _expect(entry.get("type", "filesystem"), str, f"{at}.type")
        if kind not in SOURCE_KEYS:
            raise ConfigError(f"{at}.type must be one of {', '.join(sorted(SOURCE_KEYS))}, "
                              f"got {kind!r}")
        unknown = set(entry) - SOURCE_KEYS[kind]
        if unknown:
            raise ConfigError(f"{at}: unknown key(s) {', '.join(sorted(unknown))} for a {kind} "
                              f"source; known: {', '.join(sorted(SOURCE_KEYS[kind]))}")
        if "name" not in entry:
            raise ConfigError(f"{at}: name is required")
        sc = SourceConfig(
            name=_expect(entry["name"], str, f"{at}.name"), type=kind,
            include=_str_list(entry["include"], f"{at}.include") if "include" in entry
            else list(compile_.include),
            exclude=_str_list(entry.get("exclude", []), f"{at}.exclude"))
        if "prefix" in entry:
            sc.prefix = _expect(entry["prefix"], str, f"{at}.prefix")
        if kind == "filesystem":
            sc.root = source.parent / Path(_expect(entry.get("root", "."), str,
                                                   f"{at}.root")).expanduser()
        else:
            if "url" not in entry:
                raise ConfigError(f"{at}: url is required for a git source")
            url = _expect(entry["url"], str, f"{at}.url")
            local = "://" not in url and ":" not in url.split("/")[0]
            sc.url = str(source.parent / Path(url).expanduser()) if local else url
            sc.ref = _expect(entry.get("ref", "HEAD"), str, f"{at}.ref")
        out.append(sc)
    return out


def _agents(cfg: Config, data: Mapping[str, Any], source: Path, *, trusted: bool) -> None:
    """``[agents.NAME]``, ``[agents.script.NAME]`` and (user config only) ``[agents.python.NAME]``:
    a repository's sediment.toml must not make ``serve`` import code."""
    section = _expect(data.get("agents", {}), dict, f"{source}: [agents]")
    for key, value in section.items():
        if key in AGENT_KINDS:
            if key == "python" and not trusted:
                raise ConfigError(f"{source}: [agents.python] is allowed only in the user config "
                                  "(a project's sediment.toml must not run Python code); "
                                  "use a Lua persona ([agents.script.NAME]) instead")
            tables = _expect(value, dict, f"{source}: [agents.{key}]")
            for name, table in tables.items():
                _expect(table, dict, f"{source}: [agents.{key}.{name}]")
                cfg.agents[name] = AgentDefinition(name, AGENT_KINDS[key], dict(table), source)
        else:
            _expect(value, dict, f"{source}: [agents.{key}]")
            cfg.agents[key] = AgentDefinition(key, "toml", dict(value), source)


def _destinations(data: Mapping[str, Any], source: Path) -> None:
    """A project's sediment.toml comes with the repository: it may not choose where the
    user's text and credentials go (the store server, the embedding server, the variable
    whose secret is sent as the bearer token)."""
    store = data.get("store")
    emb = data.get("embedder")
    named = [*(["store"] if isinstance(store, str) else []),
             *(["store.url"] if isinstance(store, dict) and "url" in store else []),
             *(f"embedder.{k}" for k in ("base_url", "api_key_env")
               if isinstance(emb, dict) and k in emb)]
    if named:
        them = "it" if len(named) == 1 else "them"
        raise ConfigError(
            f"{source}: {', '.join(named)} may not be set in a project's sediment.toml: a "
            "cloned repository must not choose where your memories, queries and API keys "
            f"are sent. Set {them} in your user config ({USER_CONFIG_HINT}), the environment "
            "(SEDIMENT_STORE, SEDIMENT_EMBED_BASE_URL, SEDIMENT_EMBED_API_KEY) or a flag "
            f"(--store) instead, and remove {them} from this file")


def _apply(cfg: Config, data: Mapping[str, Any], source: Path, *, trusted: bool = False) -> None:
    if not trusted:
        _destinations(data, source)
    _agents(cfg, data, source, trusted=trusted)
    data = dict(data)
    sources = data.pop("sources", None)
    unknown = set(data) - set(KEYS) - {"agents"}
    if unknown:
        raise ConfigError(f"{source}: unknown section(s) {', '.join(sorted(unknown))}; "
                          f"known: {', '.join(sorted([*KEYS, 'agents', 'sources']))}")
    if isinstance(data.get("store"), str):
        cfg.store_url = data.pop("store")
    store = _section(data, "store", source)
    if "url" in store:
        cfg.store_url = _expect(store["url"], str, f"{source}: store.url")
    if "dir" in store:
        cfg.layer_dir = cfg.root / Path(_expect(store["dir"], str,
                                                f"{source}: store.dir")).expanduser()
    if "cache_dir" in store:
        cfg.cache_dir = source.parent / _expect(store["cache_dir"], str,
                                                f"{source}: store.cache_dir")
    emb = _section(data, "embedder", source)
    cfg.embedder.explicit = cfg.embedder.explicit or "name" in emb
    for key in ("name", "base_url", "model", "api_key_env"):
        if key in emb:
            setattr(cfg.embedder, key, _expect(emb[key], str, f"{source}: embedder.{key}"))
    if "dim" in emb:
        dim = _expect(emb["dim"], int, f"{source}: embedder.dim")
        if dim < 1:
            raise ConfigError(f"{source}: embedder.dim must be at least 1, got {dim}")
        cfg.embedder.dim = dim
    ctx = _section(data, "context", source)
    if ctx:
        cfg.context.append((str(source), dict(ctx)))
    comp = _section(data, "compile", source)
    for key in ("include", "exclude"):
        if key in comp:
            setattr(cfg.compile, key, _str_list(comp[key], f"{source}: compile.{key}"))
    if "max_chars" in comp:
        n = _expect(comp["max_chars"], int, f"{source}: compile.max_chars")
        if n < 100:
            raise ConfigError(f"{source}: compile.max_chars must be at least 100, got {n}")
        cfg.compile.max_chars = n
    if "default_kind" in comp:
        cfg.compile.default_kind = _expect(comp["default_kind"], str,
                                           f"{source}: compile.default_kind")
    if "element_type" in comp:
        et = _expect(comp["element_type"], str, f"{source}: compile.element_type")
        if et not in ("f32", "i8"):
            raise ConfigError(f"{source}: compile.element_type must be 'f32' or 'i8'")
        cfg.compile.element_type = et
    if "kinds" in comp:
        rules = _expect(comp["kinds"], list, f"{source}: compile.kinds")
        parsed = []
        for i, rule in enumerate(rules):
            where = f"{source}: compile.kinds[{i}]"
            _expect(rule, dict, where)
            if set(rule) != {"glob", "kind"}:
                raise ConfigError(f"{where} must have exactly the keys glob and kind, got "
                                  f"{', '.join(sorted(rule)) or 'none'}")
            glob = _expect(rule["glob"], str, f"{where}.glob")
            kind = _expect(rule["kind"], str, f"{where}.kind")
            parsed.append((glob, kind))
        cfg.compile.kinds = parsed
    if sources is not None:
        cfg.sources = _sources(sources, cfg.compile, source)


def _not_a_file(path: Path) -> str:
    return "a directory, not a file" if path.is_dir() else (
        "something that is not a regular file" if path.exists() else
        "a file that does not exist")


def store_url(cfg: Config, option: str | None) -> str | None:
    """The PostgreSQL store an adapter serves: ``--store`` (``option``), else
    ``SEDIMENT_STORE``, else the config files' ``store``; None means the layer files. An
    explicit ``--dir`` with no ``--store`` is the caller's business (it picks the files)."""
    chosen = option if option is not None else cfg.store_url
    if chosen is None:
        return None
    if not chosen.strip():
        raise ConfigError("the store URL is empty: give postgresql://host/database"
                          "[?project=NAME], or leave it out to use the layer files")
    return chosen.strip()


def load_config(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """The configuration seen from ``cwd`` with the environment ``env`` (default: the
    process's own); every variable is read from ``env``, never from ``os.environ`` behind it."""
    env = os.environ if env is None else env
    var = Environment.read(env)
    here = (cwd or Path.cwd()).resolve()
    project = here / var.config if var.config else _find_project_file(here)
    if project is not None and not project.is_file():
        raise ConfigError(f"{project}: SEDIMENT_CONFIG names "
                          f"{_not_a_file(project)}")
    root = project.parent.resolve() if project is not None else here
    cfg = Config(root=root, layer_dir=root, env=var)
    user_file = Path(platformdirs.user_config_dir("sediment")) / "config.toml"
    if var.user_config:
        user_file = here / var.user_config
        if user_file.exists() and not user_file.is_file():
            raise ConfigError(f"{user_file}: SEDIMENT_USER_CONFIG names "
                              f"{_not_a_file(user_file)}")
    if user_file.is_file():
        _apply(cfg, _read_toml(user_file), user_file, trusted=True)
        cfg.source_files.append(user_file)
    if project is not None:
        _apply(cfg, _read_toml(project), project.resolve())
        cfg.source_files.append(project)
    if var.dir:
        cfg.layer_dir = here / var.dir
    if var.store:
        cfg.store_url = var.store
    cfg.embedder.explicit = cfg.embedder.explicit or var.embedder is not None
    for key, value in (("name", var.embedder), ("base_url", var.embed_base_url),
                       ("model", var.embed_model), ("dim", var.embed_dim)):
        if value is not None:
            setattr(cfg.embedder, key, value)
    named = cfg.embedder.api_key_env
    cfg.embedder.api_key = (var.embed_api_key or (named and env.get(named))
                            or env.get("OPENAI_API_KEY") or None)
    if var.cache_dir == "off":
        cfg.cache_dir = None
    elif var.cache_dir:
        cfg.cache_dir = here / var.cache_dir
    elif cfg.cache_dir is None:
        cfg.cache_dir = Path(platformdirs.user_cache_dir("sediment"))
    return cfg


_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def process_actor(env: Environment) -> str:
    """Whom this process acts as (the CLI, ``sediment.open``, and a server's callers
    without a token): ``SEDIMENT_ACTOR``, else the OS user with the characters an actor
    name cannot hold turned into ``-``."""
    if env.actor:
        return env.actor
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        user = "user"
    name = _NOT_IN_A_NAME.sub("-", user).lstrip("._-")[:40]
    return name or "user"


def tokens_file(env: Environment) -> Path:
    """The token file (``sediment token``): ``SEDIMENT_TOKENS_FILE``, else ``tokens.json``
    beside the user config file (``SEDIMENT_USER_CONFIG``, else the platform's)."""
    if env.tokens_file:
        return Path(env.tokens_file)
    if env.user_config:
        return Path(env.user_config).parent / "tokens.json"
    return Path(platformdirs.user_config_dir("sediment")) / "tokens.json"


def data_dir(env: Environment) -> Path:
    """Where actors' own stores live: ``SEDIMENT_DATA_DIR``, else the platform data dir."""
    if env.data_dir:
        return Path(env.data_dir)
    return Path(platformdirs.user_data_dir("sediment"))


def places(env: Environment, context: ContextSettings | None = None,
           session: str | None = None) -> Places:
    """What a workspace is handed from the environment: where actors' own data lives, the
    memory dedup threshold, whom the process acts as and its token file; ``context`` is
    the ``[context]`` settings, ``session`` the context session (default: the pid)."""
    from sediment.context import ContextSettings
    from sediment.workspace import Places

    given: dict[str, Any] = {"context": context or ContextSettings()}
    if env.memory_dedup is not None:
        given["dedup_threshold"] = env.memory_dedup
    if session is not None:
        given["session"] = session
    return Places(data_dir(env), actor=process_actor(env), tokens_file=tokens_file(env),
                  **given)
