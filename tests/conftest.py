"""Shared fixtures: where ../shared lives, isolated config and caches for every test."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests import zygote
from tests.pg.conftest import pg_server, pg_url  # noqa: F401  (every backend's tests)

if TYPE_CHECKING:
    from sediment.store import LayerSet
    from sediment.workspace import Places, Workspace

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SEDIMENT_SHARED", REPO.parent / "shared"))
CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
"""Set by CI services (and by .ci/run): every test must run, none may skip for missing data."""


def shared(*parts: str) -> Path:
    """A path inside the conformance data kept beside the repository (``../shared``).

    That data (the reference implementation's layer files, the KCP conformance fixtures) is
    not part of the repository, so in a bare clone the test, or the whole module when called
    at import, is skipped with a reason naming what is missing and where. Under CI a missing
    path fails instead: CI has the data and must not skip what needs it.
    """
    path = SHARED.joinpath(*parts)
    if not path.exists():
        reason = (f"needs {'/'.join(parts)} from the shared conformance data, expected at "
                  f"{path} (../shared beside the repository, or set SEDIMENT_SHARED)")
        if CI:
            pytest.fail(f"{reason}; CI must have it", pytrace=False)
        pytest.skip(reason, allow_module_level=True)
    return path


def env_places(actor: str | None = None) -> Places:
    """What an adapter hands a workspace from this test's environment (the isolated one
    below, with whatever the test set), as ``sediment.config.places``; ``actor`` names the
    server's own actor instead of ``SEDIMENT_ACTOR``."""
    from sediment.config import Environment, places

    got = places(Environment.read())
    return got if actor is None else replace(got, actor=actor)


def files_workspace(store: Path | LayerSet, actor: str | None = None, *,
                    root: Path | None = None) -> Workspace:
    """A workspace over a directory's layers with the hash embedder and
    :func:`env_places`, as ``sediment serve --dir`` builds one (in process)."""
    from sediment.embed import HashEmbedder
    from sediment.store import LayerSet
    from sediment.workspace import Workspace

    layers = store if isinstance(store, LayerSet) else LayerSet.from_directory(store)
    return Workspace.over_files(layers, HashEmbedder(), env_places(actor), root=root)


@pytest.fixture(scope="session", autouse=True)
def _compiled_sources() -> None:
    """Compile the package to bytecode once, before any test starts a ``sediment`` process.

    Where ``PYTHONDONTWRITEBYTECODE`` is set (the shared development host sets it), no
    process writes the cache, so each of the suite's thousands of ``sediment`` processes
    compiled the hundred-odd modules it imports from source: a quarter of a short command's
    CPU time. Reading a cache that exists is allowed either way; ``__pycache__`` is ignored
    by git, and two workers writing the same file replace it atomically."""
    import compileall
    import warnings

    import sediment

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compileall.compile_dir(Path(sediment.__file__).parent, quiet=2)


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads the developer's own config or writes to their cache."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("SEDIMENT_USER_CONFIG", str(home / "config.toml"))
    monkeypatch.setenv("SEDIMENT_CACHE_DIR", str(home / "cache"))
    monkeypatch.setenv("SEDIMENT_DATA_DIR", str(home / "data"))
    for var in ("SEDIMENT_DIR", "SEDIMENT_EMBEDDER", "SEDIMENT_CONFIG", "SOURCE_DATE_EPOCH",
                "SEDIMENT_EMBED_BASE_URL", "SEDIMENT_EMBED_MODEL", "SEDIMENT_EMBED_DIM",
                "SEDIMENT_EMBED_API_KEY", "OPENAI_API_KEY", "SEDIMENT_ACTOR",
                "SEDIMENT_TOKENS_FILE", "SEDIMENT_MEMORY_DEDUP", "SEDIMENT_TOKEN",
                "SEDIMENT_STORE", "SEDIMENT_OIDC_ISSUER", "SEDIMENT_OIDC_RESOURCE",
                "SEDIMENT_OIDC_AUDIENCE", "SEDIMENT_OIDC_ACTOR_CLAIM", "SEDIMENT_OIDC_SCOPES",
                "SEDIMENT_OIDC_SCOPE_CLAIMS"):
        monkeypatch.delenv(var, raising=False)
    yield


# -- the real `sediment` console script, run as a user would ---------------------------
SEDIMENT = Path(sys.executable).parent / "sediment"


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


Runner = Callable[..., Run]


def run_sediment(*args: str, cwd: Path, env: dict[str, str], timeout: float = 120) -> Run:
    """One ``sediment ARGS`` command in ``cwd`` with exactly the environment ``env``, stdin
    from /dev/null, its stdout and stderr captured: a real process running the console
    script's entry point, forked from an interpreter that has already imported it (see
    tests/zygote.py: what that covers and what not, and ``SEDIMENT_TEST_FORK=0`` in ``env``
    or the environment for the installed script itself)."""
    code, out, err = zygote.run([str(SEDIMENT), *args], cwd=cwd, env=env, timeout=timeout)
    return Run(code, out, err)


@pytest.fixture(scope="session", autouse=True)
def _zygote() -> Iterator[None]:
    """Stop this worker's ``sediment`` zygote, if a test started it, when the session ends."""
    yield
    zygote.stop()


@pytest.fixture
def sediment(tmp_path: Path) -> Runner:
    """Run ``sediment ARGS`` as a user would (``cwd`` defaults to the test's tmp_path, the
    environment to the test's, with the hash embedder unless ``env`` names another).

    Each command is its own process running the console script's entry point with its own
    argv, cwd, environment, stdin, stdout, stderr and exit code, forked from a process that
    has already imported Sediment instead of starting Python (tests/zygote.py says why that
    is still the real command and what it leaves out: interpreter start-up, which the tests
    that pass ``env={"SEDIMENT_TEST_FORK": "0"}`` and tests/docs keep covering)."""
    if not SEDIMENT.exists():
        pytest.fail(f"{SEDIMENT} not found: install the package (pip install -e .)")

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> Run:
        full_env = dict(os.environ)
        full_env.setdefault("SEDIMENT_EMBEDDER", "hash")
        full_env.update(env or {})
        return run_sediment(*args, cwd=cwd or tmp_path, env=full_env, timeout=timeout)

    return run
