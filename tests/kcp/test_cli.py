"""End to end: ``sediment kcp ...`` through the real console script."""

from __future__ import annotations

from pathlib import Path

from sediment.kcp import load_yaml, validate_file
from tests.cli.conftest import Runner
from tests.kcp.helpers import manifest, unit, write_tree
from tests.kcp.project import DOCS


def test_validate_a_valid_manifest(sediment: Runner, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", DOCS)
    r = sediment("kcp", "validate", str(root / "knowledge.yaml"))
    assert r.code == 0, r.err
    assert "knowledge.yaml: valid (5 units, 0 relationships; 0 errors" in r.out


def test_validate_discovers_every_manifest_and_fails_on_one_invalid(
        sediment: Runner, tmp_path: Path) -> None:
    write_tree(tmp_path, {"knowledge.yaml": manifest(unit("a")),
                          "svc/knowledge.yaml": manifest(unit("b", scope="universe"))})
    r = sediment("kcp", "validate", cwd=tmp_path)
    assert r.code == 1
    assert "knowledge.yaml: valid" in r.out and "svc/knowledge.yaml: INVALID" in r.out
    assert "error   [unit.scope.enum] unit 'b' scope:" in r.out
    data = sediment("kcp", "validate", "--json", str(tmp_path)).json()
    assert data["valid"] is False
    assert [m["valid"] for m in data["manifests"]] == [True, False]
    err = data["manifests"][1]["errors"][0]
    assert (err["unit"], err["field"], err["rule"]) == ("b", "scope", "unit.scope.enum")
    assert data["manifests"][0]["unit_count"] == 1


def test_validate_reports_parse_errors(sediment: Runner, tmp_path: Path) -> None:
    path = tmp_path / "knowledge.yaml"
    path.write_text(manifest(unit(path="../../etc/passwd")))
    r = sediment("kcp", "validate", str(path))
    assert r.code == 1 and "could not be parsed" in r.out and "path.escape" in r.out
    data = sediment("kcp", "validate", "--json", str(path)).json()
    assert data["manifests"][0]["parse_error"] is True


def test_validate_without_a_manifest_is_an_error(sediment: Runner, tmp_path: Path) -> None:
    r = sediment("kcp", "validate", cwd=tmp_path)
    assert r.code == 1 and r.err.startswith("Error: no knowledge.yaml under")
    r = sediment("kcp", "validate", str(tmp_path / "nope.yaml"))
    assert r.code == 1 and "no such file" in r.err


def test_validate_remote_is_guarded(sediment: Runner, tmp_path: Path) -> None:
    path = tmp_path / "knowledge.yaml"
    path.write_text(manifest(unit("a"), manifests=[
        {"id": "lan", "url": "https://127.0.0.1/knowledge.yaml"}]))
    data = sediment("kcp", "validate", "--remote", "--json", str(path)).json()
    assert data["remote"][0]["refused"][0]["rule"] == "remote.address"


def test_validate_remote_with_a_300_character_host_label(sediment: Runner,
                                                          tmp_path: Path) -> None:
    path = tmp_path / "knowledge.yaml"
    path.write_text(manifest(unit("a"), manifests=[
        {"id": "far", "url": f"https://{'a' * 300}.example/knowledge.yaml"},
        {"id": "odd", "url": "https://[::1/knowledge.yaml"}]))
    r = sediment("kcp", "validate", "--remote", str(path))
    assert r.code == 1 and "Internal error" not in r.err, (r.out, r.err)
    assert r.out.count("[manifests.url.invalid]") == 2
    assert "a label is 300 characters long; DNS allows 63" in r.out


def test_init_writes_a_starter_with_intents_left_to_write(sediment: Runner,
                                                          tmp_path: Path) -> None:
    write_tree(tmp_path, {"README.md": "# Acme\n\nHello.\n",
                          "docs/Guide Book.md": "Intro\n\n## Setting up\n",
                          "node_modules/x/README.md": "# no\n", ".github/notes.md": "# no\n"})
    r = sediment("kcp", "init", "--project", "Acme", cwd=tmp_path)
    assert r.code == 0, r.err
    text = (tmp_path / "knowledge.yaml").read_text()
    assert text.count('intent: ""') == 2 and text.count("# TODO:") == 2
    assert "(first heading: Acme)" in text and "(first heading: Setting up)" in text
    loaded = load_yaml(text).value
    assert [u["id"] for u in loaded["units"]] == ["readme", "docs-guide-book"]
    assert loaded["units"][1]["path"] == "docs/Guide Book.md"
    result = validate_file(tmp_path / "knowledge.yaml")
    assert {i.rule for i in result.errors} == {"unit.intent.required"}
    assert "write each empty intent" in r.out


def test_init_refuses_to_overwrite_without_force(sediment: Runner, tmp_path: Path) -> None:
    (tmp_path / "knowledge.yaml").write_text("project: mine\n")
    (tmp_path / "README.md").write_text("# X\n")
    r = sediment("kcp", "init", cwd=tmp_path)
    assert r.code == 1 and "already exists; pass --force" in r.err
    assert (tmp_path / "knowledge.yaml").read_text() == "project: mine\n"
    r = sediment("kcp", "init", "--force", "--json", cwd=tmp_path)
    assert r.code == 0 and r.json()["units"] == 1


def test_query_ranks_units(sediment: Runner, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", DOCS)
    r = sediment("kcp", "query", "rollout", "production", "--root", str(root))
    assert r.code == 0, r.err
    assert r.out.splitlines()[0].startswith("1. deploy-v3  score 8 (trigger, intent)")
    data = sediment("kcp", "query", "--json", "deploy", "--root", str(root)).json()
    assert [x["unit_id"] for x in data["results"]] == ["deploy-v3"]
    assert data["results"][0]["uri"] == "knowledge://acme-platform/deploy-v3"
    r = sediment("kcp", "query", "deploy", "--include-deprecated", "--json", "--root",
                 str(root))
    # both score 1 (id): KCP 15.4 breaks ties by declaration order
    assert [x["unit_id"] for x in r.json()["results"]] == ["deploy-v2", "deploy-v3"]
    r = sediment("kcp", "query", "nothing-matches-this", "--root", str(root))
    assert r.code == 0 and "No unit matches." in r.out


def test_query_needs_terms(sediment: Runner, tmp_path: Path) -> None:
    assert sediment("kcp", "query", cwd=tmp_path).code == 2


def test_every_kcp_command_has_help_and_json(sediment: Runner) -> None:
    for command in ("validate", "init", "query"):
        r = sediment("kcp", command, "--help")
        assert r.code == 0 and "--json" in r.out, command
