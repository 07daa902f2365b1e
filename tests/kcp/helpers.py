"""Small manifests for the KCP tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from sediment.format import Chunk, encode_layer
from sediment.ingest import chunk_file, source_ref
from sediment.kcp import KcpPlan, ValidationResult, plan_kcp, validate_manifest


def unit(uid: str = "guide", **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"id": uid, "path": f"docs/{uid}.md",
                            "intent": f"What does {uid} explain?", "scope": "global",
                            "audience": ["developer", "agent"]}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not _DROP}


_DROP = object()
DROP: Any = _DROP


def manifest(*units: dict[str, Any], **root: Any) -> str:
    doc: dict[str, Any] = {"kcp_version": "0.14", "project": "demo", "version": "1.0.0",
                           "updated": "2026-03-01", "units": list(units) or [unit()]}
    doc.update(root)
    doc = {k: v for k, v in doc.items() if v is not _DROP}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def check(text: str) -> ValidationResult:
    return validate_manifest(text)


def rules(result: ValidationResult) -> tuple[set[str], set[str]]:
    return {i.rule for i in result.errors}, {i.rule for i in result.warnings}


def compile_project(root: Path, out: Path, embedder: Any, *, extra: Sequence[str] = ()
                    ) -> KcpPlan:
    """What the compile does with KCP, in miniature: chunk the globbed files plus the unit
    files, number them 1..n, append the plan's annotations, embed (meta.* rows are zero)
    and write one base layer at ``out``."""
    plan = plan_kcp(root)
    chunks: list[Chunk] = []
    by_path: dict[str, list[int]] = {}
    for rel in sorted(set(plan.files) | set(extra)):
        doc_chunks, _ = chunk_file(rel, (root / rel).read_text())
        for c in doc_chunks:
            cid = len(chunks) + 1
            chunks.append(Chunk(cid, c.kind, c.content, "human", 1.0, 0, (source_ref(c),)))
            by_path.setdefault(rel, []).append(cid)
    chunks += plan.annotations(by_path, len(chunks) + 1,
                               created_at_ms=dict.fromkeys(plan.manifest_paths, 5000))
    vectors = np.asarray(embedder.embed([c.content or " " for c in chunks]), dtype=np.float32)
    for n, c in enumerate(chunks):
        if c.kind.startswith("meta."):
            vectors[n] = 0.0
    metadata = {"v": 1, "embedding_profile": embedder.profile.to_dict()}
    out.write_bytes(encode_layer(chunks, vectors, metadata=metadata))
    return plan


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
