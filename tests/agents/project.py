"""A compiled example project (conventions, a KCP manifest, runbooks) and the personas of
docs/personas.md, written from that page so its examples cannot drift."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests import zygote
from tests.conftest import REPO

SEDIMENT = str(Path(sys.executable).parent / "sediment")
PAGE = REPO / "docs" / "personas.md"

FILES = {
    "docs/conventions.md": "# Conventions\n\nEvery function MUST have type hints.\n\n"
                           "## Errors\n\nA rule: raise a SedimentError subclass, never a "
                           "bare Exception.\n",
    "docs/setup.md": "# Setup\n\nInstall Python 3.11, then run ./run lint to create the "
                     "virtual environment.\n",
    "docs/architecture.md": "# Architecture\n\nThe CLI calls services; services call the "
                            "store. Imports go one way.\n",
    "runbooks/payments.md": "# Payments runbook\n\nWhen payments-api returns 502, restart the "
                            "payments worker and drain the queue.\n",
    "runbooks/search.md": "# Search runbook\n\nWhen search latency spikes, rebuild the index.\n",
    "knowledge.yaml": """\
kcp_version: "0.14"
project: acme
version: "1.0.0"
units:
  - id: setup
    path: docs/setup.md
    intent: "How do I set up a development machine?"
    scope: project
    audience: [developer, agent]
    triggers: [onboarding, setup]
  - id: architecture
    path: docs/architecture.md
    intent: "How is the code organised?"
    scope: project
    audience: [developer, agent]
    depends_on: [setup]
""",
}


def page_blocks(lang: str) -> list[str]:
    """The page's blocks of ``lang`` under "Three examples" (the specification's example
    at the top of the page is tested from the specification: test_spec_examples.py)."""
    text = PAGE.read_text().split("\n## Three examples\n", 1)[1]
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def example_scripts() -> dict[str, str]:
    """``agents/NAME.lua`` -> code, for every Lua block of the page."""
    out = {}
    for block in page_blocks("lua"):
        first = block.splitlines()[0]
        assert first.startswith("-- agents/"), first
        out[first[3:].strip()] = block
    return out


def example_config() -> str:
    return next(b for b in page_blocks("toml") if "[agents.script.code-reviewer]" in b)


def write_project(root: Path) -> Path:
    """The project, compiled with the hash embedder, with the page's three personas."""
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for rel, code in example_scripts().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(code)
    (root / "sediment.toml").write_text(
        '[compile]\ninclude = ["docs/**/*.md", "runbooks/**/*.md"]\n\n' + example_config())
    subprocess.run([zygote.script(SEDIMENT), "compile", "--root", str(root), "--out",
                    str(root / "AGENTS.db")], cwd=root, check=True, capture_output=True,
                   env=env(), timeout=120)
    return root


def env(**extra: str) -> dict[str, str]:
    import os

    out = dict(os.environ)
    out["SEDIMENT_EMBEDDER"] = "hash"
    out.update(extra)
    return out
