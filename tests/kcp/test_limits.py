"""Hostile manifests: encodings, unsafe tags, and every limit, each refused quickly."""

from __future__ import annotations

from pathlib import Path

import pytest

from sediment.kcp import Limits, ManifestError, load_yaml, parse_manifest, validate_file
from tests.kcp.helpers import manifest, unit


def refused(data: bytes | str, rule: str, limits: Limits | None = None) -> ManifestError:
    with pytest.raises(ManifestError) as exc:
        parse_manifest(data, limits=limits or Limits())
    assert exc.value.rule == rule, str(exc.value)
    return exc.value


def billion_laughs(levels: int = 9) -> str:
    lines = ["lol0: &lol0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for n in range(1, levels + 1):
        refs = ", ".join([f"*lol{n - 1}"] * 10)
        lines.append(f"lol{n}: &lol{n} [{refs}]")
    return "project: laughs\nunits: []\n" + "\n".join(lines) + "\n"


@pytest.mark.timeout(10)
def test_billion_laughs_is_refused_quickly_with_a_clear_error() -> None:
    err = refused(billion_laughs(), "limit.nodes")  # expanded, it would outlast the timeout
    assert "alias counts as everything it repeats" in str(err)


def test_aliases_within_the_limit_are_fine() -> None:
    text = ("project: demo\nunits:\n  - id: a\n    path: a.md\n    intent: Why a?\n"
            "    scope: global\n    audience: &readers [developer, agent]\n"
            "  - id: b\n    path: b.md\n    intent: Why b?\n    scope: global\n"
            "    audience: *readers\n")
    r = parse_manifest(text)
    assert r.valid and r.manifest and r.manifest.units[1].audience == ("developer", "agent")


@pytest.mark.parametrize("text", [
    "project: !!python/object/apply:os.system ['echo pwned']\nunits: []\n",
    "project: !!python/name:os.system\nunits: []\n",
    "!!python/object:builtins.dict {project: x}\n",
    "project: !!binary aGVsbG8=\nunits: []\n",
    "project: !!timestamp 2026-01-01\nunits: []\n",
    "project: x\nunits: !!set {a: null}\n",
    "project: x\nunits: !!omap [a: 1]\n",
    "project: !custom x\nunits: []\n",
])
def test_tags_beyond_the_core_schema_are_refused(text: str) -> None:
    refused(text, "yaml.tag")


def test_recursive_alias_is_refused() -> None:
    refused("project: x\nunits: &u [*u]\n", "yaml.alias")


def test_duplicate_keys_are_refused() -> None:
    refused("project: a\nproject: b\nunits: []\n", "yaml.duplicate-key")


def test_more_than_one_document_is_refused() -> None:
    refused("project: a\n---\nproject: b\n", "yaml.documents")


def test_bad_yaml_names_the_line() -> None:
    err = refused("project: a\nunits: [\n  - x: : :\n", "yaml.syntax")
    assert err.line is not None


@pytest.mark.parametrize(("data", "rule"), [
    (b"\xef\xbb\xbfproject: x\n", "encoding.bom"),
    ("project: x\n".encode("utf-16"), "encoding.utf8"),
    (b"project: caf\xe9\n", "encoding.utf8"),
])
def test_encodings(data: bytes, rule: str) -> None:
    refused(data, rule)


def test_a_root_that_is_not_a_mapping_is_refused() -> None:
    refused("- a\n- b\n", "root.type")
    refused("", "root.type")


def test_file_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "knowledge.yaml"
    path.write_text(manifest() + "#" * 2000 + "\n")
    r = validate_file(path, limits=Limits(max_bytes=1000))
    assert r.parse_error and r.errors[0].rule == "limit.size"
    refused(b"x" * 1001, "limit.size", Limits(max_bytes=1000))


def test_unit_count_limit() -> None:
    text = manifest(*[unit(f"u{i}") for i in range(11)])
    refused(text, "limit.units", Limits(max_units=10))
    assert parse_manifest(text, limits=Limits(max_units=11)).valid


def test_string_length_limit() -> None:
    refused(manifest(unit(intent="x" * 101)), "limit.string", Limits(max_string=100))


def test_number_literal_length_is_bounded() -> None:
    refused("project: x\nunits: []\nn: " + "9" * 5000 + "\n", "limit.string")


@pytest.mark.timeout(10)
def test_depth_limit_holds_for_very_deep_nesting() -> None:
    refused("project: x\nunits: " + "[" * 50_000 + "]" * 50_000 + "\n", "limit.depth")


@pytest.mark.timeout(10)
def test_depth_limit_above_the_parsers_own_is_still_a_depth_error() -> None:
    """Newer libyaml refuses 1,000 levels itself; that is reported as ours, never as syntax."""
    error = refused("project: x\nunits: " + "[" * 6_000 + "]" * 6_000 + "\n", "limit.depth",
                    Limits(max_depth=5_000))
    assert "nesting is deeper than" in str(error)


def test_node_limit_without_aliases() -> None:
    refused("project: x\nunits: [" + ", ".join(["1"] * 200) + "]\n", "limit.nodes",
            Limits(max_nodes=100))


@pytest.mark.timeout(20)
def test_a_large_legitimate_manifest_loads() -> None:
    """Within the limits, 5,000 units with triggers and a dependency chain load whole (its
    speed is a benchmark's business, not a test's: a loaded CI machine is not a clock)."""
    units = "".join(
        f"  - id: u{i}\n    path: docs/u{i}.md\n    intent: \"What is unit {i} about?\"\n"
        f"    scope: project\n    audience: [developer, agent]\n"
        f"    triggers: [alpha, t{i}]\n    depends_on: [u{max(i - 1, 0)}]\n"
        for i in range(5000))
    text = f'kcp_version: "0.14"\nproject: big\nunits:\n{units}'
    r = parse_manifest(text)
    assert r.valid and r.unit_count == 5000


def test_load_yaml_uses_the_yaml_1_2_core_schema() -> None:
    loaded = load_yaml("a: [yes, no, on, off, true, 0o17, 0x1F, 017, 1.5, .inf, ~, 2026-01-02]")
    assert loaded.value == {"a": ["yes", "no", "on", "off", True, 15, 31, 17, 1.5,
                                  float("inf"), None, "2026-01-02"]}
