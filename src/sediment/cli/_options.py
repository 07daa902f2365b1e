"""Options shared by several commands, and what they turn into: the configuration, the
layer set (explicit paths checked), the embedder, and ``--require-signature``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sediment.cli._output import detail
from sediment.config import Config, load_config, process_actor, store_url
from sediment.embed import DEFAULT_EMBEDDER, Embedder, make_configured
from sediment.errors import ConfigError, NotFoundError
from sediment.ingest import selector
from sediment.ops.embedding import embedder_for_layers
from sediment.store import LayerName, LayerSet, LayerStore

if TYPE_CHECKING:
    from sediment.review import SourceLines

F = TypeVar("F", bound=Callable[..., Any])


def get_config(ctx: click.Context) -> Config:
    obj = ctx.ensure_object(dict)
    if "config" not in obj:
        obj["config"] = load_config()
    cfg: Config = obj["config"]
    return cfg


def own_actor() -> str:
    """Whom the running command acts as without ``--actor``: ``SEDIMENT_ACTOR``, else the
    OS user (:func:`sediment.config.process_actor` over the loaded configuration)."""
    return process_actor(get_config(click.get_current_context()).env)


def source_lines(cfg: Config, root: Path) -> SourceLines:
    """How ``path:line`` sources are shown to people: read under ``root``, and only from
    the files the project's compile globs select (never dotfiles or Sediment's own).
    Imported here: the review package loads cryptography, which a search never needs."""
    from sediment.review import SourceLines

    return SourceLines(root, selector(cfg.compile.include, cfg.compile.exclude))


embedder_option = click.option("--embedder", "embedder_name", default=None,
                               help="Embedder (minilm, hash, openai); default from config.")


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True,
                        help="Print machine-readable JSON instead of text.")(f)


def store_option(f: F) -> F:
    """``--store URL``: a PostgreSQL store instead of the layer files (``config.store_url``
    resolves it with SEDIMENT_STORE and sediment.toml)."""
    return click.option("--store", "store", metavar="URL", default=None,
                        help="A PostgreSQL store: postgresql://[user@]host[:port]/db"
                             "[?project=NAME] (default: SEDIMENT_STORE, sediment.toml's "
                             "store, else the layer files).")(f)


def layer_options(f: F) -> F:
    """--dir plus one explicit path option per layer (any may be omitted)."""
    for name in reversed(list(LayerName)):
        f = click.option(f"--{name.value}", f"{name.value}_path", type=click.Path(path_type=Path),
                         default=None,
                         help=f"Path of the {name.value} layer (default DIR/{name.file_name}).")(f)
    return click.option("--dir", "layer_dir", type=click.Path(path_type=Path), default=None,
                        help="Directory holding the standard layer files (default: the "
                             "project root, or SEDIMENT_DIR).")(f)


def store_layer_options(f: F) -> F:
    """``layer_options`` plus ``--store``, for commands that work on either backend."""
    return layer_options(store_option(f))


def team_url(cfg: Config, store: str | None, layer_dir: Path | None,
             paths: Mapping[str, Path | None]) -> str | None:
    """The PostgreSQL store a command works on: ``--store``, or SEDIMENT_STORE /
    sediment.toml's when no layer directory or file is named; None for the layer files."""
    explicit_files = layer_dir is not None or any(v is not None for v in paths.values())
    if store is not None and explicit_files:
        raise click.UsageError("--store and --dir (or a layer path) name two stores; give one")
    return store_url(cfg, store) if store is not None or not explicit_files else None


def open_store(cfg: Config, store: str | None, layer_dir: Path | None,
               paths: Mapping[str, Path | None], *,
               writes: Iterable[LayerName] = ()) -> LayerStore:
    """The backend a command works on: the project of :func:`team_url`, else the layer
    files as ``open_layerset`` opens them."""
    url = team_url(cfg, store, layer_dir, paths)
    if url is None:
        return open_layerset(cfg, layer_dir, paths, writes)
    from sediment.pg import PgStore

    opened = PgStore(url)
    try:
        return opened.require_project()
    except BaseException:
        opened.close()
        raise


def open_layerset(cfg: Config, layer_dir: Path | None,
                  paths: Mapping[str, Path | None] | None = None,
                  writes: Iterable[LayerName] = ()) -> LayerSet:
    """The layer set of ``--dir`` (else the configured directory) and explicit paths.

    A directory or path given explicitly must exist: a typo is an error naming it, not an
    empty result; only the layers in ``writes`` may be new files (in a directory that
    exists)."""
    if layer_dir is not None and not layer_dir.is_dir():
        what = "is not a directory" if layer_dir.exists() else "no such directory"
        raise NotFoundError(f"--dir {layer_dir}: {what}")
    directory = layer_dir or cfg.layer_dir
    chosen: dict[LayerName | str, Path | None] = {n: directory / n.file_name for n in LayerName}
    writable = set(writes)
    for name in LayerName:
        explicit = (paths or {}).get(f"{name.value}_path")
        if explicit is None:
            continue
        if not str(explicit).strip():
            raise NotFoundError(f"--{name.value} is empty: give the path of the "
                                f"{name.value} layer")
        if explicit.is_dir():
            raise NotFoundError(f"--{name.value} {explicit}: is a directory, not a layer file")
        if not explicit.exists():
            if name not in writable:
                raise NotFoundError(f"--{name.value} {explicit}: no such layer file")
            if not (explicit.parent if str(explicit.parent) else Path(".")).is_dir():
                raise NotFoundError(f"--{name.value} {explicit}: no such directory "
                                    f"{explicit.parent}")
        chosen[name] = explicit
    return LayerSet(chosen)


def build_embedder(cfg: Config, name: str | None = None, *,
                   layerset: LayerStore | None = None,
                   names: Iterable[LayerName] | None = None) -> Embedder:
    """The embedder named by ``--embedder``, else the configured one, else the offline
    embedder the layers record, else the default (MiniLM)."""
    e = cfg.embedder
    cache = cfg.cache_dir / "embeddings.sqlite" if cfg.cache_dir is not None else None
    chosen = name or (e.name if e.explicit else None)
    if chosen is None and layerset is not None:
        found = embedder_for_layers(layerset, names, cache_path=cache)
        if found is not None:
            detail(f"embedder: {found.profile.describe()} (recorded in the layers)")
            return found
    embedder = make_configured(chosen or DEFAULT_EMBEDDER, cache_path=cache, dim=e.dim,
                               base_url=e.base_url, model=e.model, api_key=e.api_key)
    detail(f"embedder: {chosen or DEFAULT_EMBEDDER}"
           + (" (configured)" if chosen else " (the default)"))
    return embedder


def signature_option(f: F) -> F:
    """Add ``--require-signature PUBKEY`` to a command that takes ``layer_options``: the
    base layer must carry a valid detached signature (``AGENTS.db.sig``) before it runs."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        pubkey = kwargs.pop("require_signature", None)
        if pubkey is not None:
            base = kwargs.get("base_path")
            if base is None:
                directory = kwargs.get("layer_dir") or get_config(
                    click.get_current_context()).layer_dir
                base = Path(directory) / LayerName.BASE.file_name
            from sediment.review import require_signature

            require_signature(base, pubkey)
        return f(*args, **kwargs)

    option: Callable[[F], F] = click.option(
        "--require-signature", "require_signature", metavar="PUBKEY", default=None,
        type=click.Path(path_type=Path, dir_okay=False),
        help="Refuse to run unless the base layer's signature (AGENTS.db.sig) verifies "
             "with this Ed25519 public key.")
    return option(wrapper)  # type: ignore[arg-type]


def token_options(f: F) -> F:
    """``--token`` (or SEDIMENT_TOKEN) and ``--token-file``: the shared bearer token of
    ``serve`` and ``ui``, resolved by :func:`shared_token`."""
    f = click.option("--token-file", type=click.Path(path_type=Path, dir_okay=False),
                     default=None,
                     help="Read the shared bearer token from this file (its first line; "
                          "keep the file private, mode 0600).")(f)
    return click.option("--token", default=None, envvar="SEDIMENT_TOKEN",
                        help="Shared bearer token (env SEDIMENT_TOKEN). Prefer the "
                             "variable or --token-file: a value given here is visible to "
                             "every user of the machine (ps, /proc).")(f)


def shared_token(ctx: click.Context, token: str | None, token_file: Path | None) -> str | None:
    """The shared token from ``--token-file``, SEDIMENT_TOKEN or ``--token``; a token
    typed on the command line works but is warned about, since any local user can read a
    process's arguments."""
    given = ctx.get_parameter_source("token") is click.core.ParameterSource.COMMANDLINE
    if token_file is not None:
        if given:
            raise click.UsageError("give --token or --token-file, not both")
        try:
            text = token_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--token-file {token_file}: cannot read it "
                              f"({getattr(exc, 'strerror', None) or exc})") from None
        lines = text.strip().splitlines()
        if not lines or not lines[0].strip():
            raise ConfigError(f"--token-file {token_file}: the file is empty")
        if token_file.stat().st_mode & 0o077:
            click.echo(f"sediment: warning: {token_file} can be read by other users; "
                       f"chmod 600 {token_file}", err=True)
        return lines[0].strip()
    if token is not None and given:
        click.echo("sediment: warning: --token on the command line is visible to every "
                   "user of this machine (ps, /proc); set SEDIMENT_TOKEN or use "
                   "--token-file instead", err=True)
    return token
