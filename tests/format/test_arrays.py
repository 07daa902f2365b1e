"""``distinct`` is ``np.unique`` by a faster road, without importing ``numpy.ma``."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sediment.format.arrays import DENSE_MIN, SORT_MAX, distinct


@given(hnp.arrays(st.sampled_from([np.uint32, np.int64, np.uint8]),
                  st.integers(0, 3 * SORT_MAX)))
def test_distinct_is_unique(values: np.ndarray) -> None:
    got = distinct(values)
    assert got.dtype == values.dtype
    assert np.array_equal(got, np.unique(values))


def test_a_sparse_column_is_sorted_not_tabled() -> None:
    values = np.full(SORT_MAX + 1, 2**32 - 1, dtype=np.uint32)
    values[::7] = DENSE_MIN
    assert distinct(values).tolist() == [DENSE_MIN, 2**32 - 1]


def test_distinct_does_not_import_numpy_ma() -> None:
    script = ("import sys\nimport numpy as np\nfrom sediment.format.arrays import distinct\n"
              "distinct(np.arange(10000, dtype=np.uint32) % 7)\n"
              "distinct(np.asarray([3, -1, 3]))\nprint('numpy.ma' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "False"
