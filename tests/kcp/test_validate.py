"""Validator rules, one behaviour per test: errors, warnings and normalised values."""

from __future__ import annotations

from pathlib import Path

import pytest

from sediment.kcp import ManifestError, parse_manifest, validate_file, validate_manifest
from tests.kcp.helpers import DROP, check, manifest, rules, unit


def test_a_full_manifest_is_valid_and_normalised() -> None:
    text = manifest(
        unit("about", validated="2026-02-24"),
        unit("arch", depends_on=["about"], triggers=["Architecture", "components"],
             validated="2026-01-15"),
        unit("deploy", supersedes="deploy-v2", depends_on=["arch"], validated="2026-02-20"),
        relationships=[{"from": "about", "to": "arch", "type": "context"}])
    r = check(text)
    assert r.valid and not r.errors, [str(i) for i in r.errors]
    assert (r.unit_count, r.relationship_count) == (3, 1)
    m = r.manifest
    assert m is not None and m.project == "demo" and m.kcp_version == "0.14"
    arch = m.unit("arch")
    assert arch is not None and arch.depends_on == ("about",)
    assert arch.triggers == ("Architecture", "components")
    assert m.supersedes() == {"deploy": ["deploy-v2"]}


@pytest.mark.parametrize("field", ["id", "path", "intent", "scope", "audience"])
def test_each_required_unit_field(field: str) -> None:
    errors, _ = rules(check(manifest(unit(**{field: DROP}))))
    assert f"unit.{field}.required" in errors


def test_missing_scope_and_audience_get_the_level_1_defaults_but_are_errors() -> None:
    r = check(manifest(unit(scope=DROP, audience=DROP)))
    assert not r.valid
    u = r.manifest.units[0] if r.manifest else None
    assert u is not None and u.scope == "global" and u.audience == ()


@pytest.mark.parametrize(("root", "rule"), [
    ({"project": DROP}, "project.required"),
    ({"project": "  "}, "project.required"),
    ({"project": ["x"]}, "project.type"),
    ({"units": DROP}, "units.required"),
    ({"units": []}, "units.empty"),
    ({"units": {"a": 1}}, "units.type"),
])
def test_root_errors(root: dict[str, object], rule: str) -> None:
    errors, _ = rules(check(manifest(**root)))
    assert rule in errors


@pytest.mark.parametrize("bad", ["API-Guide", "my_unit", "ünit", "a b"])
def test_ids_outside_the_pattern_are_errors(bad: str) -> None:
    errors, _ = rules(check(manifest(unit(bad))))
    assert "unit.id.pattern" in errors


def test_a_numeric_id_is_read_as_text_with_a_warning() -> None:
    r = check(manifest(unit(2024)))  # type: ignore[arg-type]
    assert r.valid and r.manifest and r.manifest.units[0].id == "2024"
    assert "unit.id.type" in rules(r)[1]


def test_scope_must_be_one_of_three() -> None:
    errors, _ = rules(check(manifest(unit(scope="universe"))))
    assert errors == {"unit.scope.enum"}


def test_unknown_audience_warns_and_is_kept() -> None:
    r = check(manifest(unit(audience=["alien", "agent"])))
    assert r.valid and "unit.audience.unknown" in rules(r)[1]


def test_duplicate_ids_keep_the_first_and_warn() -> None:
    r = check(manifest(unit("a", intent="first one?"), unit("a", intent="second one?")))
    assert r.valid and r.unit_count == 1
    assert r.manifest and r.manifest.units[0].intent == "first one?"
    assert "unit.id.duplicate" in rules(r)[1]


def test_triggers_are_truncated_and_capped_with_warnings() -> None:
    long = "x" * 75
    r = check(manifest(unit(triggers=[long] + [f"t{i}" for i in range(25)])))
    assert r.valid
    u = r.manifest.units[0] if r.manifest else None
    assert u is not None and len(u.triggers) == 20 and u.triggers[0] == "x" * 60
    assert {"unit.triggers.length", "unit.triggers.count"} <= rules(r)[1]


def test_depends_on_cycles_drop_the_closing_edge_silently() -> None:
    r = check(manifest(unit("a", depends_on=["b"]), unit("b", depends_on=["c"]),
                       unit("c", depends_on=["a", "c"])))
    assert r.valid
    m = r.manifest
    assert m is not None
    deps = {u.id: u.depends_on for u in m.units}
    assert deps == {"a": ("b",), "b": ("c",), "c": ()}
    assert m.ignored_edges == [("c", "a"), ("c", "c")]
    assert not {w for w in rules(r)[1] if "depends_on" in w}


def test_unknown_depends_on_warns_and_is_dropped() -> None:
    r = check(manifest(unit("a", depends_on=["ghost"])))
    assert r.valid and "unit.depends_on.unknown" in rules(r)[1]
    assert r.manifest and r.manifest.units[0].depends_on == ()


def test_relationships_unknown_types_and_ids_warn_and_are_inactive() -> None:
    r = check(manifest(unit("a"), unit("b"), relationships=[
        {"from": "a", "to": "b", "type": "destroys"},
        {"from": "a", "to": "ghost", "type": "enables"},
        {"from": "b", "to": "a", "type": "supersedes"}]))
    assert r.valid and r.relationship_count == 3
    assert {"relationship.type.unknown", "relationship.unknown-id"} <= rules(r)[1]
    assert r.manifest and [x.active for x in r.manifest.relationships] == [False, False, True]
    assert r.manifest.supersedes() == {"b": ["a"]}


def test_unknown_kcp_version_warns_and_unquoted_version_keeps_its_text() -> None:
    r = check(manifest(kcp_version="99.0"))
    assert r.valid and "kcp_version.unknown" in rules(r)[1]
    unquoted = manifest().replace("kcp_version: '0.14'", "kcp_version: 0.10")
    r = check(unquoted)
    assert r.manifest and r.manifest.kcp_version == "0.10"
    assert "kcp_version.type" in rules(r)[1] and "kcp_version.unknown" not in rules(r)[1]


def test_unknown_fields_are_ignored() -> None:
    r = check(manifest(unit(**{"x-acme-priority": "high", "colour": "red"}), extra={"a": 1}))
    assert r.valid


def test_yaml_1_2_keeps_dates_and_norway_as_strings() -> None:
    text = ("project: demo\nunits:\n  - id: a\n    path: a.md\n    intent: no\n"
            "    scope: global\n    audience: [agent]\n    validated: 2026-02-25\n")
    r = check(text)
    assert r.valid and r.manifest
    assert r.manifest.units[0].intent == "no" and r.manifest.units[0].validated == "2026-02-25"


def test_an_intent_that_repeats_the_file_name_warns() -> None:
    r = check(manifest(unit("guide", path="docs/guide.md", intent="guide.md")))
    assert "unit.intent.filename" in rules(r)[1]


@pytest.mark.parametrize("path", ["/etc/shadow", "C:/Windows/win.ini", "\\\\server\\share",
                                  "https://example.com/a.md"])
def test_absolute_paths_are_refused(path: str) -> None:
    with pytest.raises(ManifestError) as exc:
        parse_manifest(manifest(unit(path=path)))
    assert exc.value.rule == "path.absolute"


@pytest.mark.parametrize("path", ["../README.md", "docs/../../x.md", "..\\..\\etc\\passwd"])
def test_paths_escaping_the_root_are_refused(path: str) -> None:
    with pytest.raises(ManifestError) as exc:
        parse_manifest(manifest(unit(path=path)))
    assert exc.value.rule == "path.escape"


def test_dot_dot_inside_the_root_is_normalised() -> None:
    r = check(manifest(unit(path="docs/../README.md")))
    assert r.valid and r.manifest and r.manifest.units[0].path == "README.md"


def test_backslashes_are_an_error() -> None:
    errors, _ = rules(check(manifest(unit(path="docs\\guide.md"))))
    assert "unit.path.separator" in errors


def test_missing_files_warn_and_symlinks_out_of_the_root_are_errors(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("# Here\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    outside.write_text("secret")
    (tmp_path / "docs" / "link.md").symlink_to(outside)
    (tmp_path / "knowledge.yaml").write_text(manifest(
        unit("here", path="docs/here.md"), unit("gone", path="docs/gone.md"),
        unit("link", path="docs/link.md")))
    r = validate_file(tmp_path / "knowledge.yaml")
    errors = {(i.unit, i.rule) for i in r.errors}
    warnings = {(i.unit, i.rule) for i in r.warnings}
    assert errors == {("link", "unit.path.escape")}
    assert ("gone", "unit.path.missing") in warnings
    assert ("here", "unit.path.missing") not in warnings


def test_unreadable_or_absent_file_is_a_manifest_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError):
        validate_file(tmp_path / "knowledge.yaml")


class TestLaterFields:
    def test_compliance_sensitivity_root_and_unit(self) -> None:
        errors, _ = rules(check(manifest(unit(compliance={"sensitivity": "secret"}),
                                         compliance={"sensitivity": "top"})))
        assert errors == {"compliance.sensitivity"}

    def test_delegation(self) -> None:
        r = check(manifest(unit("a", delegation={"max_depth": 3}),
                           unit("b", delegation={"max_depth": -1}),
                           delegation={"max_depth": 2, "human_in_the_loop": {
                               "approval_mechanism": "custom"}}))
        assert {"delegation.max_depth.exceeds-root", "delegation.max_depth.type",
                "delegation.hitl.docs_url"} == rules(r)[0]

    def test_auth_and_access(self) -> None:
        r = check(manifest(unit("a", access="restricted"), unit("b", auth_scope="x"),
                           unit("c", access="sometimes")))
        assert r.valid
        assert {"auth.missing", "unit.auth_scope", "unit.access.unknown"} <= rules(r)[1]
        r = check(manifest(auth={"methods": [{"type": "oauth2", "issuer": "http://a"}]}))
        assert "auth.oauth2.issuer" in rules(r)[0]
        r = check(manifest(auth={"methods": [{"type": "kerberos"}]}))
        assert r.valid and "auth.methods.unrecognised" in rules(r)[1]

    def test_federation_declarations(self) -> None:
        ref = {"id": "platform", "url": "https://example.com/k.yaml"}
        r = check(manifest(unit(external_depends_on=[{"manifest": "ghost", "unit": "x",
                                                      "on_failure": "explode"}]),
                           manifests=[ref, {**ref}, {"id": "Bad_Id", "url": "https://a/b"},
                                      {"id": "plain", "url": "http://a/b"},
                                      {"id": "up", "url": "https://a/b",
                                       "local_mirror": "../outside.yaml"}]))
        assert {"manifests.id.duplicate", "manifests.id.pattern", "manifests.url.https",
                "manifests.local_mirror"} == rules(r)[0]
        assert {"external_depends_on.manifest", "external_depends_on.on_failure"} <= rules(r)[1]
        assert r.manifest and [(m.id, m.local_mirror) for m in r.manifest.manifests] == [
            ("platform", None), ("up", None)]

    def test_discovery_bands(self) -> None:
        r = check(manifest(
            unit("a", discovery={"verification_status": "rumored", "confidence": 0.2}),
            unit("b", discovery={"verification_status": "rumored"}),
            unit("c", discovery={"verification_status": "verified", "confidence": 0.5,
                                 "contradicted_by": "ghost"}),
            unit("d", discovery={"verification_status": "observed",
                                 "verified_at": "2026-01-01"})))
        assert {(i.unit, i.rule) for i in r.errors} == {("b", "discovery.rumored-confidence")}
        assert {"discovery.verified-confidence", "discovery.contradicted_by",
                "discovery.verified_at"} <= rules(r)[1]

    def test_hints_and_deprecation(self) -> None:
        r = check(manifest(unit("old", deprecated=True, hints={"summary_unit": "ghost",
                                                              "token_estimate": 120}),
                           unit("new", supersedes="old")))
        assert r.valid and "unit.hints.summary_unit" in rules(r)[1]
        assert "unit.deprecated.no-successor" not in rules(r)[1]
        old = r.manifest.unit("old") if r.manifest else None
        assert old is not None and old.deprecated and old.token_estimate == 120


def test_validate_manifest_turns_parse_failures_into_results() -> None:
    r = validate_manifest(b"\xef\xbb\xbfproject: x\n")
    assert r.parse_error and not r.valid and r.errors[0].rule == "encoding.bom"
    assert r.manifest is None and r.to_dict()["parse_error"] is True
