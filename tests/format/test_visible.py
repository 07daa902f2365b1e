"""Untrusted text shown to people (issue 26, item 15): every control, format (bidi,
zero-width, tag) and separator character escaped; JSON keeps the exact value."""

from __future__ import annotations

import json
import sys
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from sediment.format.visible import escape_json_text, visible
from sediment.server.web._app import visible as page_visible

UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}
UNSAFE = [chr(c) for c in range(sys.maxunicode + 1)
          if unicodedata.category(chr(c)) in UNSAFE_CATEGORIES]


def test_every_control_format_and_separator_character_is_escaped() -> None:
    assert len(UNSAFE) > 200
    for ch in UNSAFE:
        assert ch not in visible(f"a{ch}b"), hex(ord(ch))
        if ch not in "\n\t":
            assert ch not in visible(f"a{ch}b", keep_lines=True), hex(ord(ch))
            assert ch not in page_visible(f"a{ch}b"), hex(ord(ch))


def test_the_escapes_name_the_character() -> None:
    assert visible("\x1b[2J\u202eabc\u200b\ufeff\U000e0041") == \
        "\\x1b[2J\\u202eabc\\u200b\\ufeff\\U000e0041"
    assert visible("a\nb\tc\r", keep_lines=True) == "a\nb\tc\\x0d"
    assert page_visible("x\u2066y\u3164z") == "x\\u2066y\\u3164z"


def test_ordinary_text_is_untouched() -> None:
    text = "Grüße, 東京, emoji 🎉, maths ∑ and RTL text עברית"
    assert visible(text) == text == page_visible(text)


@given(st.recursive(st.text() | st.integers() | st.none(),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12))
def test_json_output_decodes_to_the_same_value_and_shows_nothing_raw(value: object) -> None:
    text = escape_json_text(json.dumps(value, ensure_ascii=False))
    assert json.loads(text) == value
    assert not any(ch in text for ch in set(UNSAFE) - {"\n", "\t"})
