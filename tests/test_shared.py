"""CI runs every test: the shared conformance data must be there, so nothing skips for it."""

from __future__ import annotations

import pytest

from tests.conftest import CI, SHARED

NEEDED = ("interop/agentsdb-reference", "kcp-conformance/fixtures", "seeds")


@pytest.mark.skipif(not CI, reason="CI is not set: a bare clone may skip the tests that need "
                                   "the shared conformance data")
@pytest.mark.parametrize("part", NEEDED)
def test_ci_has_the_shared_data(part: str) -> None:
    assert (SHARED / part).is_dir(), (
        f"CI=true but {SHARED / part} is missing: CI must run the tests that read it "
        "(put the shared data beside the repository, or set SEDIMENT_SHARED)")
