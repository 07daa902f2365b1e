"""Untrusted text made safe to show: every character that moves the cursor, reorders what
follows or cannot be seen at all is written as an escape.

Chunk contents, memories and sources are written by whoever wrote the layer. Shown raw, a
control character can rewrite a reviewer's terminal, a bidirectional override (U+202E) can
make ``accept`` read as ``tpecca``, and a zero-width character (U+200B) or a tag character
(U+E0041) can hide words from the person while an agent still reads them. The terminal and
the web page both show such characters as ``\\x1b``, ``\\u202e`` or ``\\U000e0041``; JSON keeps
the exact string with ``\\uXXXX`` escapes.

Escaped: C0 and C1 controls and DEL (Cc), every format character (Cf: bidirectional
controls, zero-width space, joiners and non-joiners, word joiner, BOM, soft hyphen, tag
characters, interlinear annotations), the line and paragraph separators (Zl, Zp) and the
Hangul fillers, which render as blank letters.
"""

from __future__ import annotations

import re

__all__ = ["escape_json_text", "visible"]

_INVISIBLE = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
)
_ALL = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}]")
_KEEP_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")
_JSON = re.compile(f"[\x7f-\x9f{_INVISIBLE}]")
"""json.dumps already escapes C0; the rest would reach the terminal raw inside strings."""


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c < 0x100:
        return f"\\x{c:02x}"
    return f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}"


def _json_escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c < 0x10000:
        return f"\\u{c:04x}"
    c -= 0x10000
    return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"


def visible(text: str, *, keep_lines: bool = False) -> str:
    """``text`` with every unsafe character written as an escape; ``keep_lines`` leaves
    newlines and tabs as they are (the carriage return is still escaped)."""
    return (_KEEP_LINES if keep_lines else _ALL).sub(_escape, text)


def escape_json_text(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with the characters ``visible``
    escapes written as ``\\uXXXX`` (surrogate pairs above U+FFFF): it decodes to the same
    value, and shows nothing raw. Valid because those characters occur only inside
    strings."""
    return _JSON.sub(_json_escape, text)
