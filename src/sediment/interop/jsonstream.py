"""JSON read a value at a time, so a large export never has to fit in memory.

Accepts what peers write: JSON Lines (one value per line, blank lines allowed), a JSON
array of records, or an object whose ``results`` (or ``memories``) member is that array
(mem0's ``get_all``). Each record comes with the line it starts on, so an error names
``path:line``. No value may be longer than ``MAX_LINE_BYTES``.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from sediment.interop.model import MAX_LINE_BYTES, fail

_READ = 64 * 1024
_WS = " \t\r\n"
_DECODER = json.JSONDecoder()
_LISTS = ("results", "memories")


class _Stream:
    def __init__(self, fh: IO[bytes], where: str, limit: int) -> None:
        self.fh = fh
        self.where = where
        self.limit = limit
        self.buf = ""
        self.pos = 0
        self.line = 1
        self.eof = False
        self.pinned = False
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()

    def _fill(self) -> bool:
        if self.eof:
            return False
        data = self.fh.read(_READ)
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            line = self.line + self.buf.count("\n", self.pos) + \
                data[:max(exc.start, 0)].count(b"\n")
            raise fail(f"{self.where}:{line}", "not UTF-8 text") from None
        if not data:
            self.eof = True
        if self.pos > _READ and not self.pinned:
            self.buf = self.buf[self.pos:]
            self.pos = 0
        self.buf += text
        return bool(data) or bool(text)

    def peek(self) -> str:
        """The next character that is not white space ('' at the end)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                if self.buf[self.pos] == "\n":
                    self.line += 1
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return ""

    def take(self, ch: str) -> None:
        if self.peek() != ch:
            got = self.peek() or "the end of the file"
            raise fail(f"{self.where}:{self.line}", f"expected {ch!r}, found {got!r}")
        self.pos += 1

    def value(self) -> tuple[int, Any]:
        """The JSON value at the cursor and the line it starts on."""
        self.peek()
        start_line = self.line
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.buf) - self.pos > self.limit:
                    raise fail(f"{self.where}:{start_line}", f"a value longer than "
                               f"{self.limit} bytes; split the file") from None
                if self._fill():
                    continue
                line = start_line + self.buf.count("\n", self.pos, exc.pos)
                raise fail(f"{self.where}:{line}", f"not JSON: {exc.msg}") from None
            except RecursionError:
                raise fail(f"{self.where}:{start_line}", "JSON nested too deeply") from None
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if (end >= len(self.buf) or (number and end + 3 > len(self.buf))) \
                    and not self.eof and self._fill():
                continue  # a number may go on in the next block ("1" of "1.5e-3")
            if end - self.pos > self.limit:
                raise fail(f"{self.where}:{start_line}", f"a value longer than "
                           f"{self.limit} bytes; split the file")
            self.line += self.buf.count("\n", self.pos, end)
            self.pos = end
            return start_line, value


def records(path: Path, where: str, *, limit: int = MAX_LINE_BYTES
            ) -> Iterator[tuple[int, Any]]:
    """Every record of ``path`` (JSON Lines, an array, or ``{"results": [...]}``) with
    the line it starts on."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise fail(where, f"cannot read: {exc.strerror or exc}") from None
    with fh:
        s = _Stream(fh, where, limit)
        first = s.peek()
        if first == "[":
            yield from _array(s)
            _end(s)
            return
        if first == "{":
            mark = (s.pos, s.line)
            s.pinned = True
            s.pos += 1
            if s.peek() == '"':
                _, key = s.value()
                if key in _LISTS and s.peek() == ":":
                    s.pos += 1
                    if s.peek() == "[":
                        s.pinned = False
                        yield from _array(s)
                        _rest_of_object(s)
                        _end(s)
                        return
            s.pos, s.line = mark
            s.pinned = False
        while s.peek():
            yield s.value()


def _array(s: _Stream) -> Iterator[tuple[int, Any]]:
    s.take("[")
    if s.peek() == "]":
        s.pos += 1
        return
    while True:
        yield s.value()
        if s.peek() == ",":
            s.pos += 1
            continue
        s.take("]")
        return


def _rest_of_object(s: _Stream) -> None:
    while s.peek() == ",":
        s.pos += 1
        s.value()
        s.take(":")
        s.value()
    s.take("}")


def _end(s: _Stream) -> None:
    if s.peek():
        raise fail(f"{s.where}:{s.line}", "unexpected text after the JSON document")
