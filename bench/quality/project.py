"""Our own regression set: questions about this repository's docs, through the real compile.

``project_qa.json`` (written by us, not a public benchmark) names for each question the file
and the heading of the section that answers it. The files are copied into a temporary root
(the RFC seed comes from ``../shared/seeds``), compiled with
``sediment.ingest.compile.compile_layer`` as ``sediment compile`` would, and every chunk is
labelled ``file#innermost heading`` from the same chunker, so any chunk of the expected
section counts.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.quality.evaluate import ModeResult, run_questions
from bench.quality.locomo import REPO
from sediment.embed import Embedder
from sediment.ingest import DEFAULT_MAX_CHARS, chunk_file
from sediment.ingest.compile import CompileOptions, compile_layer
from sediment.search import SearchRequest
from sediment.store import LayerName, LayerSet

QA = Path(__file__).with_name("project_qa.json")
SOURCES = {
    "README.md": REPO / "README.md",
    **{f"docs/{name}.md": REPO / "docs" / f"{name}.md"
       for name in ("getting-started", "mcp-clients", "configuration", "development",
                    "architecture")},
    "seeds/agents-db-rfc.md": REPO.parent / "shared" / "seeds" / "agents-db-rfc.md",
}


def _labels(root: Path) -> dict[str, str]:
    """``path:line`` of every chunk the compile makes -> ``path#innermost heading``."""
    out = {}
    for rel in SOURCES:
        chunks, _ = chunk_file(rel, (root / rel).read_text(), max_chars=DEFAULT_MAX_CHARS)
        for c in chunks:
            heading = c.heading_path[-1] if c.heading_path else ""
            out[f"{c.path}:{c.start_line}"] = f"{c.path}#{heading}"
    return out


def run(embedder: Embedder, base: SearchRequest, modes: Sequence[str]) -> dict[str, ModeResult]:
    spec = json.loads(QA.read_text())
    with tempfile.TemporaryDirectory(prefix="sediment-project-qa-") as tmp:
        root = Path(tmp) / "src"
        for rel, src in SOURCES.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, root / rel)
        out = Path(tmp) / "AGENTS.db"
        report = compile_layer(CompileOptions(root, list(SOURCES), out), embedder)
        by_ref = _labels(root)
        known = set(by_ref.values())
        ls = LayerSet({LayerName.BASE: out})
        layer = ls.layer(LayerName.BASE)
        assert layer is not None
        chunk_label = {c.id: by_ref.get(str(c.sources[0])) for c in layer.file.chunks()}
        questions = []
        for item in spec["questions"]:
            want = f"{item['file']}#{item['heading']}"
            if want not in known:
                raise SystemExit(f"project_qa.json: no section {want!r} in the compiled docs; "
                                 "update the question")
            questions.append((item["q"], item["file"], frozenset({want})))
        print(f"  project docs: {report.chunks} chunks from {report.files} files, "
              f"{len(questions)} questions", file=sys.stderr)
        results: dict[str, ModeResult] = {}
        run_questions(ls, embedder, questions, chunk_label, base, results, modes)
    return results
