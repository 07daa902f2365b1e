"""Values crossing the Lua boundary: plain data round-trips, nothing else crosses."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.agents.lua import MAX_DEPTH, _Run
from sediment.errors import AgentError

keys = st.text(min_size=1, max_size=8)
scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20) | \
    st.floats(allow_nan=False, allow_infinity=False)
data = st.recursive(scalars, lambda inner: st.lists(inner.filter(lambda v: v is not None),
                                                    min_size=1, max_size=4)
                    | st.dictionaries(keys, inner.filter(lambda v: v is not None),
                                      min_size=1, max_size=4), max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(data)
def test_plain_data_round_trips(value: Any) -> None:
    run = _Run("convert", 5.0, 16 * 1024 * 1024)
    assert run.to_python(run.to_lua(value)) == value


def test_functions_and_deep_tables_do_not_cross() -> None:
    run = _Run("convert", 5.0, 16 * 1024 * 1024)
    with pytest.raises(AgentError, match="cannot pass a Lua function"):
        run.to_python(run.lua.eval("{ f = function() end }"))
    deep = run.lua.execute("local t = {} local c = t for i = 1, 100 do c.x = {} c = c.x end "
                           "return t")
    with pytest.raises(AgentError, match=f"nests deeper than {MAX_DEPTH}"):
        run.to_python(deep)
    with pytest.raises(AgentError, match=r"keys must be strings or 1\.\.n"):
        run.to_python(run.lua.eval("{ [true] = 1 }"))
