"""Where a project's context store lives for each ``persistence`` setting.

- ``project`` (default): ``<layer dir>/.sediment/context``, beside the project's layers.
- ``session``: ``<layer dir>/.sediment/context/sessions/<session>``: one store per server
  process, so a new session starts empty (its files stay until deleted).
- ``global``: ``<data dir>/context``: one store across projects (items still record the
  project they came from).
An explicit ``path`` overrides all three.
"""

from __future__ import annotations

from pathlib import Path

from sediment.context.settings import ContextSettings


def context_dir(settings: ContextSettings, layer_dir: Path, data_dir: Path,
                session: str) -> Path:
    if settings.path:
        return layer_dir / Path(settings.path).expanduser()
    if settings.persistence == "global":
        return data_dir / "context"
    base = layer_dir / ".sediment" / "context"
    return base / "sessions" / session if settings.persistence == "session" else base
