"""Store URLs a user typed: any text is a StoreUrl or a ValidationError, and a message
never shows a password, even of a URL that cannot be parsed."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sediment.errors import ValidationError
from sediment.pg.connection import parse_store_url, redact_url, scrub
from tests.cli.conftest import Runner

URL_TEXT = st.text(alphabet=st.sampled_from("postgresql:/@[]:?&=#%.-_ab1\uff1a\u2100\ufe6b"),
                   max_size=40)


@given(st.one_of(URL_TEXT, st.builds(lambda t: f"postgresql://{t}", URL_TEXT)))
def test_any_text_is_a_store_url_or_a_validation_error(text: str) -> None:
    with contextlib.suppress(ValidationError):
        parse_store_url(text)
    redact_url(text)
    scrub("message", text)


@given(st.text(alphabet=st.sampled_from("[]:/@.ab\uff1a\u2100"), max_size=12))
def test_a_malformed_url_never_shows_its_password(host: str) -> None:
    url = f"postgres://user:s3cretpw@{host}/db"
    assert "s3cretpw" not in redact_url(url)
    try:
        parse_store_url(url)
    except ValidationError as exc:
        assert "s3cretpw" not in str(exc)


@pytest.mark.parametrize("url", ["postgres://u:s3cretpw@[::1/db", "postgresql://h\uff1a1/db"])
def test_the_cli_names_a_malformed_store_url(sediment: Runner, url: str) -> None:
    """``--store 'postgres://u:p@[::1/db'`` was "Internal error: ValueError: Invalid IPv6
    URL" (exit 70) from urlsplit."""
    r = sediment("search", "--store", url, "deploys")
    assert r.code == 1 and r.err.startswith("Error: the store URL cannot be parsed"), r.err
    assert "s3cretpw" not in r.err + r.out


def test_sediment_open_names_a_malformed_store_url(tmp_path: Path) -> None:
    import sediment

    with pytest.raises(sediment.ValidationError, match="cannot be parsed"):
        sediment.open("postgres://u:s3cretpw@[::1/db")


def test_an_empty_project_option_is_refused_as_an_empty_url_project_is() -> None:
    """``--project ''`` silently meant the project ``default``; ``?project=`` was refused."""
    with pytest.raises(ValidationError, match="project name ''"):
        parse_store_url("postgresql://h/db", "")
    with pytest.raises(ValidationError, match="project name ''"):
        parse_store_url("postgresql://h/db?project=")
    assert parse_store_url("postgresql://h/db?project=docs").project == "docs"
    assert parse_store_url("postgresql://h/db?project=docs", "other").project == "other"
