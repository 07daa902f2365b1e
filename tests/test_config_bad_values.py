"""Environment values out of their range are a ConfigError naming the variable when the
configuration is read, not a traceback in a server's thread or a silent misreading."""

from __future__ import annotations

import pytest

from sediment.config import Environment
from sediment.errors import ConfigError
from tests.cli.conftest import Runner


@pytest.mark.parametrize(("variable", "value"), [
    ("SEDIMENT_MEMORY_FLUSH_SECONDS", "inf"), ("SEDIMENT_MEMORY_FLUSH_SECONDS", "nan"),
    ("SEDIMENT_MEMORY_FLUSH_SECONDS", "-1"), ("SEDIMENT_PROGRESS_SECONDS", "nan"),
    ("SEDIMENT_PROGRESS_SECONDS", "-2"), ("SEDIMENT_EMBED_DIM", "-5"),
    ("SEDIMENT_EMBED_DIM", "0"), ("SEDIMENT_MEMORY_DEDUP", "nan"),
    ("SEDIMENT_MEMORY_DEDUP", "7"), ("SEDIMENT_MEMORY_DEDUP", "0"),
])
def test_a_value_out_of_range_names_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"{variable}={value!r}"):
        Environment.read({variable: value})


@pytest.mark.parametrize(("variable", "value"), [
    ("SEDIMENT_MEMORY_FLUSH_SECONDS", "0"), ("SEDIMENT_MEMORY_FLUSH_SECONDS", "2.5"),
    ("SEDIMENT_PROGRESS_SECONDS", "0"), ("SEDIMENT_EMBED_DIM", "384"),
    ("SEDIMENT_MEMORY_DEDUP", "1"),
])
def test_a_value_in_range_is_read(variable: str, value: str) -> None:
    field = variable.removeprefix("SEDIMENT_").lower()
    assert float(getattr(Environment.read({variable: value}), field)) == float(value)


def test_serve_refuses_an_infinite_flush_interval(sediment: Runner) -> None:
    """The flusher thread died with OverflowError (a traceback on stderr) from
    ``Event.wait(inf)``, and the server ran on without writing use counts."""
    r = sediment("serve", env={"SEDIMENT_MEMORY_FLUSH_SECONDS": "inf"})
    assert r.code == 1, r.err
    assert r.err.startswith("Error: environment variable SEDIMENT_MEMORY_FLUSH_SECONDS='inf'")
    assert "Traceback" not in r.err
