"""The official KCP conformance fixtures, compared as their README says.

For a fixture with an ``.expected.json``: ``parse_error`` must raise (a parse error also
passes where ``parse_error_also_acceptable``); otherwise ``valid``, ``unit_count`` and
``relationship_count`` match exactly, an invalid result has errors, and a non-empty
expected ``warnings`` list needs at least one warning. Message texts are never compared.
The fixtures without one are decided below from the KCP text, one reason each.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sediment.kcp import ManifestError, parse_manifest, validate_manifest
from tests.conftest import shared

FIXTURES = shared("kcp-conformance", "fixtures")
ALL = sorted(p.relative_to(FIXTURES).with_suffix("").as_posix()
             for p in FIXTURES.glob("*/*.yaml"))

# Outcomes decided from the spec for the fixtures that ship without an expected file.
# "warnings": rules of which at least one warning must appear; "errors": likewise errors.
DECIDED: dict[str, dict[str, Any]] = {
    # KCP 3.6: a version_pin is checked only against a fetched manifest; without fetching,
    # validators SHOULD say pins were not verified; an absent version_policy means
    # "compatible". A warning, never an error.
    "edge-cases/valid-federation-version-pin-mismatch": dict(
        valid=True, unit_count=1, relationship_count=0, warnings={"manifests.version_pin"}),
    # KCP 3.7: freshness_policy (max_age_days, on_stale warn|degrade, review_contact) is
    # optional and every value here is in its vocabulary.
    "level2/valid-with-freshness-policy": dict(valid=True, unit_count=2, relationship_count=0),
    # KCP 3.7: requires_capabilities is a list of strings, prefixed or bare; parsers MUST
    # NOT reject unknown capability values.
    "level2/valid-with-requires-capabilities": dict(
        valid=True, unit_count=4, relationship_count=0),
    # KCP 4.18: "a unit with verification_status: rumored MUST declare confidence < 0.5";
    # 0.7 breaks a MUST of the manifest format, so the manifest is invalid (an error).
    "level3/invalid-discovery-rumored-high-confidence": dict(
        valid=False, unit_count=1, relationship_count=0,
        errors={"discovery.rumored-confidence"}),
    # KCP 3.6: pins with known policies (compatible, minimum) are valid; unverified
    # without fetching, so one warning per pin.
    "level3/valid-federation-version-pin": dict(
        valid=True, unit_count=1, relationship_count=0, warnings={"manifests.version_pin"}),
    # KCP 3.8 / 4.17: authority values are all initiative | requires_approval | denied.
    "level3/valid-with-authority": dict(valid=True, unit_count=2, relationship_count=0),
    # KCP 3.9 / 4.18: every status keeps its confidence band (rumored 0.31 < 0.5, verified
    # 0.95 >= 0.8) and contradicted_by names a unit; the deprecated unit has no successor,
    # which KCP 4.13 makes a warning only.
    "level3/valid-with-discovery": dict(
        valid=True, unit_count=4, relationship_count=0,
        warnings={"unit.deprecated.no-successor"}),
    # KCP 3.6 / 3.7: url "/security/knowledge.yaml" is a relative reference, not a plain
    # http:// URL (only those MUST be rejected); it resolves against the declaring
    # manifest's own HTTPS URL, so it is valid with a warning that it is not fetched
    # for a local manifest.
    "level3/valid-with-freshness-and-capabilities": dict(
        valid=True, unit_count=3, relationship_count=0, warnings={"manifests.url.relative"}),
    # KCP 3.7: root freshness_policy is a default that unit policies replace; on_stale
    # block is in the vocabulary. "quarterly" is not an update_frequency value (4.6b), so
    # it is warned about and ignored, never an error.
    "level3/valid-with-freshness-policy-root-default": dict(
        valid=True, unit_count=4, relationship_count=0,
        warnings={"unit.update_frequency.unknown"}),
    # KCP 4.16: every visibility condition has when and then, default is a sensitivity.
    "level3/valid-with-visibility": dict(valid=True, unit_count=1, relationship_count=0),
}


def _expected(name: str) -> dict[str, Any] | None:
    path = FIXTURES / f"{name}.expected.json"
    return json.loads(path.read_text()) if path.exists() else None


def test_the_suite_is_all_there() -> None:
    with_expected = [n for n in ALL if _expected(n) is not None]
    assert len(ALL) == 50 and len(with_expected) == 40
    assert sorted(set(ALL) - set(with_expected)) == sorted(DECIDED)


@pytest.mark.parametrize("name", ALL)
def test_fixture(name: str) -> None:
    data = (FIXTURES / f"{name}.yaml").read_bytes()
    expected = _expected(name)
    if expected is not None and expected.get("parse_error"):
        with pytest.raises(ManifestError):
            parse_manifest(data, source=name)
        return
    result = validate_manifest(data, source=name)
    if expected is None:
        decided = DECIDED[name]
        assert not result.parse_error
        assert result.valid == decided["valid"], [str(i) for i in result.errors]
        assert (result.unit_count, result.relationship_count) == (
            decided["unit_count"], decided["relationship_count"])
        assert decided.get("errors", set()) <= {i.rule for i in result.errors}
        assert decided.get("warnings", set()) <= {i.rule for i in result.warnings}
        return
    if result.parse_error:
        assert expected.get("parse_error_also_acceptable"), [str(i) for i in result.errors]
        return
    assert result.valid == expected["valid"], [str(i) for i in result.errors]
    if not expected["valid"]:
        assert result.errors
    if expected.get("warnings"):
        assert result.warnings
    assert result.unit_count == expected["unit_count"]
    assert result.relationship_count == expected["relationship_count"]
