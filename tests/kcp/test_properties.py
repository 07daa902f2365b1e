"""Property tests: whatever the input, the parser gives a result or a ManifestError."""

from __future__ import annotations

import contextlib
import string
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sediment.kcp import ManifestError, ValidationResult, parse_manifest, validate_manifest

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

YAMLISH = st.lists(st.sampled_from(list(": -[]{},&*!#|>'\"\n\t?%@`\\") +
                                   list("abcxyz019.") + ["  ", "\ufeff", "\x85", "units",
                                                        "project", "id", "!!str", "&a", "*a"]),
                   max_size=80).map("".join)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=30))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=20)
FIELDS = ["id", "path", "intent", "scope", "audience", "triggers", "depends_on", "supersedes",
          "validated", "compliance", "delegation", "discovery", "hints", "access",
          "external_depends_on", "deprecated", "kind"]
units = st.dictionaries(st.sampled_from(FIELDS), values, max_size=8)
roots = st.fixed_dictionaries({}, optional={
    "kcp_version": values, "project": values, "units": st.lists(units, max_size=4) | values,
    "relationships": values, "manifests": values, "delegation": values, "auth": values,
    "compliance": values})


def check_result(r: ValidationResult) -> None:
    assert r.valid == (not r.errors)
    assert all(i.severity == "error" for i in r.errors)
    assert all(i.severity == "warning" for i in r.warnings)
    assert r.parse_error == (r.manifest is None)
    assert r.unit_count >= 0 and r.relationship_count >= 0
    r.to_dict()


@SETTINGS
@given(st.one_of(YAMLISH, st.text(max_size=200)))
def test_arbitrary_text_gives_a_result_or_a_manifest_error(text: str) -> None:
    with contextlib.suppress(ManifestError):
        parse_manifest(text)
    check_result(validate_manifest(text))


@SETTINGS
@given(st.binary(max_size=200))
def test_arbitrary_bytes_too(data: bytes) -> None:
    check_result(validate_manifest(data))


@SETTINGS
@given(roots)
def test_arbitrary_manifest_shaped_documents(doc: dict[str, Any]) -> None:
    text = yaml.safe_dump(doc, allow_unicode=True)
    with contextlib.suppress(ManifestError):
        parse_manifest(text)
    check_result(validate_manifest(text))


ids = st.text(alphabet=string.ascii_lowercase + string.digits + ".-", min_size=1, max_size=12)


@SETTINGS
@given(st.lists(ids, min_size=1, max_size=8, unique=True), st.data())
def test_well_formed_manifests_are_valid_and_acyclic(names: list[str], data: Any) -> None:
    units = [{"id": n, "path": f"docs/{i}.md", "intent": f"What is {n}?", "scope": "project",
              "audience": ["agent"], "depends_on": data.draw(st.lists(st.sampled_from(names),
                                                                      max_size=3))}
             for i, n in enumerate(names)]
    r = validate_manifest(yaml.safe_dump({"kcp_version": "0.14", "project": "p",
                                          "units": units}))
    assert r.valid, [str(i) for i in r.errors]
    assert r.unit_count == len(names) and r.manifest is not None
    deps = {u.id: u.depends_on for u in r.manifest.units}
    state: dict[str, int] = {}

    def visit(n: str) -> None:
        assert state.get(n) != 1, "cycle left in depends_on"
        if state.get(n) == 2:
            return
        state[n] = 1
        for d in deps[n]:
            visit(d)
        state[n] = 2

    for n in deps:
        visit(n)
