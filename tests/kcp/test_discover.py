"""Finding manifests: the root, llms.txt's knowledge: line, and subdirectories."""

from __future__ import annotations

from pathlib import Path

import pytest

from sediment.errors import NotFoundError
from sediment.kcp import find_manifests, llms_txt_manifest
from tests.kcp.helpers import manifest


def write(root: Path, rel: str, text: str = "") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text or manifest())


def found(root: Path) -> list[tuple[str, str]]:
    return [(m.path, m.via) for m in find_manifests(root).manifests]


def test_root_manifest(tmp_path: Path) -> None:
    write(tmp_path, "knowledge.yaml")
    assert found(tmp_path) == [("knowledge.yaml", "root")]


def test_nothing_to_find(tmp_path: Path) -> None:
    assert found(tmp_path) == []
    with pytest.raises(NotFoundError):
        find_manifests(tmp_path / "missing")


def test_llms_txt_declares_the_manifest_and_replaces_the_root_one(tmp_path: Path) -> None:
    write(tmp_path, "knowledge.yaml")
    write(tmp_path, "docs/knowledge.yaml")
    write(tmp_path, "llms.txt", "# Project\n\n> Useful things.\n> knowledge: /docs/knowledge.yaml"
          "\n\n## Docs\n\n- /docs/overview.md\n")
    d = find_manifests(tmp_path)
    assert [(m.path, m.via) for m in d.manifests] == [("docs/knowledge.yaml", "llms.txt")]
    assert any("not read" in w for w in d.warnings)


def test_knowledge_line_must_be_in_the_header(tmp_path: Path) -> None:
    assert llms_txt_manifest("# P\n\n## Docs\n> knowledge: /k.yaml\n") is None
    assert llms_txt_manifest("# P\nknowledge: /k.yaml\n") == "/k.yaml"
    assert llms_txt_manifest("# P\n> knowledge:   /a/k.yaml  \n## X\n") == "/a/k.yaml"


@pytest.mark.parametrize("value", ["/../outside.yaml", "/missing.yaml",
                                   "https://example.com/knowledge.yaml"])
def test_bad_llms_declarations_fall_back_with_a_warning(tmp_path: Path, value: str) -> None:
    write(tmp_path, "knowledge.yaml")
    write(tmp_path, "llms.txt", f"# P\n> knowledge: {value}\n")
    d = find_manifests(tmp_path)
    assert [(m.path, m.via) for m in d.manifests] == [("knowledge.yaml", "root")]
    assert d.warnings


def test_several_manifests_in_subdirectories_each_independent(tmp_path: Path) -> None:
    write(tmp_path, "knowledge.yaml")
    write(tmp_path, "services/a/knowledge.yaml")
    write(tmp_path, "services/b/knowledge.yaml")
    write(tmp_path, "node_modules/pkg/knowledge.yaml")
    write(tmp_path, ".hidden/knowledge.yaml")
    write(tmp_path, "docs/knowledge.yml")
    assert found(tmp_path) == [("knowledge.yaml", "root"),
                               ("services/a/knowledge.yaml", "subdirectory"),
                               ("services/b/knowledge.yaml", "subdirectory")]
    sub = find_manifests(tmp_path).manifests[1]
    assert sub.directory == "services/a"


def test_symlinks_do_not_lead_outside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    other = tmp_path / "other"
    write(other, "knowledge.yaml")
    write(other, "deep/knowledge.yaml")
    root.mkdir()
    (root / "linked").symlink_to(other / "deep", target_is_directory=True)
    (root / "sub").mkdir()
    (root / "sub" / "knowledge.yaml").symlink_to(other / "knowledge.yaml")
    d = find_manifests(root)
    assert d.manifests == []
    assert any("sub/knowledge.yaml" in w for w in d.warnings)
