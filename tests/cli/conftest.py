"""Run the real ``sediment`` console script in a subprocess, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SEDIMENT = Path(sys.executable).parent / "sediment"


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


Runner = Callable[..., Run]


@pytest.fixture
def sediment(tmp_path: Path) -> Runner:
    if not SEDIMENT.exists():
        pytest.fail(f"{SEDIMENT} not found: install the package (pip install -e .)")

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> Run:
        full_env = dict(os.environ)
        full_env.setdefault("SEDIMENT_EMBEDDER", "hash")
        full_env.update(env or {})
        p = subprocess.run([str(SEDIMENT), *args], cwd=cwd or tmp_path, env=full_env,
                           capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        return Run(p.returncode, p.stdout, p.stderr)

    return run
