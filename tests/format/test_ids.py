"""The one strict parser for chunk ids and ``path:line`` references given as text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sediment.errors import ValidationError
from sediment.format.ids import (
    CHUNK_ID_MAX,
    SourceRef,
    check_chunk_id,
    parse_chunk_id,
    parse_source_ref,
)

#: Text that ``int()`` or ``str.isdigit()`` lets through, and other ways to get an id wrong.
BAD_IDS = ["²", "٣", "\uff11\uff12", "9" * 5000, "0", "000", "-1", "+1", " 1", "1 ", "\t1", "1\n",
           "1_000", "1.0", "1e3", "0x10", "", "4294967296", "99999999999", "one"]


@pytest.mark.parametrize("text", BAD_IDS)
def test_bad_ids_are_refused_with_the_value_named(text: str) -> None:
    with pytest.raises(ValidationError) as exc:
        parse_chunk_id(text, what="--id")
    message = str(exc.value)
    assert message.startswith("--id ") and "not a chunk id" in message
    assert len(message) < 300
    assert repr(text)[:20] in message


def test_long_values_are_shortened_in_the_message() -> None:
    with pytest.raises(ValidationError, match=r"\(5,000 characters\)"):
        parse_chunk_id("9" * 5000)


@pytest.mark.parametrize("text,value", [("1", 1), ("007", 7), ("4294967295", CHUNK_ID_MAX),
                                        ("0" * 5000 + "12", 12)])
def test_good_ids(text: str, value: int) -> None:
    assert parse_chunk_id(text) == value


@given(st.integers(1, CHUNK_ID_MAX))
def test_every_id_round_trips(value: int) -> None:
    assert parse_chunk_id(str(value)) == value


@given(st.text(max_size=30))
def test_any_text_is_an_id_or_a_validation_error(text: str) -> None:
    try:
        value = parse_chunk_id(text)
    except ValidationError:
        assert not (text.isascii() and text.isdigit() and 0 < int(text) <= CHUNK_ID_MAX)
    else:
        assert text.isascii() and text.isdigit() and int(text) == value


@pytest.mark.parametrize("value", [0, -1, CHUNK_ID_MAX + 1, 10**5000, True],
                         ids=["zero", "negative", "u32-plus-one", "5000-digits", "bool"])
def test_numbers_outside_the_u32_range_are_refused(value: int) -> None:
    with pytest.raises(ValidationError, match="sources\\[0\\]") as exc:
        check_chunk_id(value, what="sources[0]")
    assert len(str(exc.value)) < 200


def test_numbers_in_range_pass() -> None:
    assert check_chunk_id(CHUNK_ID_MAX) == CHUNK_ID_MAX


@pytest.mark.parametrize("text,ref", [
    ("docs/a.md:12", SourceRef("docs/a.md", 12, None)),
    ("docs/a.md:12-20", SourceRef("docs/a.md", 12, 20)),
    ("C:/x.md:3", SourceRef("C:/x.md", 3, None)),
])
def test_source_refs(text: str, ref: SourceRef) -> None:
    assert parse_source_ref(text) == ref


@pytest.mark.parametrize("text", ["docs/a.md", "docs/a.md:0", "docs/a.md:²", "docs/a.md:١٢",
                                  "docs/a.md:12\n", "docs/a.md: 12", "docs/a.md:-3",
                                  "docs/a.md:" + "9" * 5000, ":12", "a\x00b:1"])
def test_not_source_refs(text: str) -> None:
    assert parse_source_ref(text) is None
