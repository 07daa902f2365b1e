"""read_text_file(): every reason a file is skipped, and the normalisation of good ones."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

from sediment.errors import ValidationError
from sediment.ingest import DEFAULT_MAX_BYTES, Skipped, SourceText, read_text_file


def write(root: Path, rel: str, data: bytes) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return rel


def test_reads_utf8_text_with_posix_path(tmp_path: Path) -> None:
    write(tmp_path, "docs/a.md", "héllo — ✓\n".encode())
    assert read_text_file(tmp_path, PurePosixPath("docs/a.md")) == SourceText(
        "docs/a.md", "héllo — ✓\n")
    assert read_text_file(tmp_path, "docs/a.md") == SourceText("docs/a.md", "héllo — ✓\n")


def test_empty_file_is_empty_text(tmp_path: Path) -> None:
    write(tmp_path, "e.md", b"")
    assert read_text_file(tmp_path, "e.md") == SourceText("e.md", "")


def test_nul_byte_means_binary(tmp_path: Path) -> None:
    write(tmp_path, "img.md", b"\x89PNG\r\n\x1a\n\x00\x00")
    assert read_text_file(tmp_path, "img.md") == Skipped("img.md", "binary: NUL byte at offset 8")


def test_only_the_first_8_kib_are_sniffed_for_nul(tmp_path: Path) -> None:
    write(tmp_path, "late.md", b"a" * 8192 + b"\x00")
    got = read_text_file(tmp_path, "late.md")
    assert isinstance(got, SourceText)
    assert got.text.endswith("\x00")


@pytest.mark.parametrize(("encoding", "name"), [("utf-16", "UTF-16"), ("utf-32", "UTF-32")])
def test_wide_unicode_is_reported_as_such(tmp_path: Path, encoding: str, name: str) -> None:
    write(tmp_path, "w.md", "# hi\n".encode(encoding))
    assert read_text_file(tmp_path, "w.md") == Skipped(
        "w.md", f"binary: starts with a {name} byte order mark; only UTF-8 is read")


def test_invalid_utf8_reports_offset_and_line(tmp_path: Path) -> None:
    write(tmp_path, "latin1.md", "ok\ncafé\n".encode("latin-1"))
    assert read_text_file(tmp_path, "latin1.md") == Skipped(
        "latin1.md", "not UTF-8: invalid byte 0xe9 at offset 6 (line 2)")


def test_truncated_multibyte_sequence_at_end(tmp_path: Path) -> None:
    write(tmp_path, "cut.md", "ab✓".encode()[:-1])
    assert read_text_file(tmp_path, "cut.md") == Skipped(
        "cut.md", "not UTF-8: invalid byte 0xe2 at offset 2 (line 1)")


def test_utf8_bom_is_stripped_and_counts_in_offsets(tmp_path: Path) -> None:
    write(tmp_path, "bom.md", b"\xef\xbb\xbf# Title\n")
    assert read_text_file(tmp_path, "bom.md") == SourceText("bom.md", "# Title\n")
    write(tmp_path, "bombad.md", b"\xef\xbb\xbfab\xff")
    assert read_text_file(tmp_path, "bombad.md") == Skipped(
        "bombad.md", "not UTF-8: invalid byte 0xff at offset 5 (line 1)")


def test_crlf_and_cr_become_lf(tmp_path: Path) -> None:
    write(tmp_path, "dos.md", b"a\r\nb\r\n\r\nc\rd\n")
    assert read_text_file(tmp_path, "dos.md") == SourceText("dos.md", "a\nb\n\nc\nd\n")


def test_unicode_line_separators_are_not_newlines(tmp_path: Path) -> None:
    write(tmp_path, "u.md", "a\u2028b\x0cc\n".encode())
    assert read_text_file(tmp_path, "u.md") == SourceText("u.md", "a\u2028b\x0cc\n")


def test_too_large_is_checked_before_reading(tmp_path: Path) -> None:
    write(tmp_path, "big.md", b"x" * 11)
    write(tmp_path, "edge.md", b"x" * 10)
    assert read_text_file(tmp_path, "big.md", max_bytes=10) == Skipped(
        "big.md", "too large: 11 bytes is over the limit of 10 bytes")
    assert read_text_file(tmp_path, "edge.md", max_bytes=10) == SourceText("edge.md", "x" * 10)
    assert DEFAULT_MAX_BYTES == 10 * 1024 * 1024


def test_default_limit_is_10_mib(tmp_path: Path) -> None:
    with (tmp_path / "huge.md").open("wb") as fh:
        fh.truncate(DEFAULT_MAX_BYTES + 1)
    assert read_text_file(tmp_path, "huge.md") == Skipped(
        "huge.md", "too large: 10,485,761 bytes is over the limit of 10,485,760 bytes")


def test_missing_file_is_unreadable(tmp_path: Path) -> None:
    assert read_text_file(tmp_path, "gone.md") == Skipped(
        "gone.md", "unreadable: No such file or directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_permission_denied_is_unreadable(tmp_path: Path) -> None:
    write(tmp_path, "locked.md", b"secret")
    (tmp_path / "locked.md").chmod(0)
    try:
        assert read_text_file(tmp_path, "locked.md") == Skipped(
            "locked.md", "unreadable: Permission denied")
    finally:
        (tmp_path / "locked.md").chmod(0o644)


def test_os_error_while_opening_is_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    write(tmp_path, "locked.md", b"secret")

    def deny(path: object, flags: int) -> int:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "open", deny)
    assert read_text_file(tmp_path, "locked.md") == Skipped(
        "locked.md", "unreadable: Permission denied")


def test_directories_and_fifos_are_not_regular_files(tmp_path: Path) -> None:
    (tmp_path / "dir.md").mkdir()
    os.mkfifo(tmp_path / "pipe.md")
    assert read_text_file(tmp_path, "dir.md") == Skipped("dir.md", "not a regular file")
    assert read_text_file(tmp_path, "pipe.md") == Skipped("pipe.md", "not a regular file")


@pytest.mark.parametrize("rel", ["/etc/passwd", "../x.md", "docs/../../x.md"])
def test_paths_must_stay_relative(tmp_path: Path, rel: str) -> None:
    with pytest.raises(ValidationError, match="must be relative to the root"):
        read_text_file(tmp_path, rel)


def test_negative_limit_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="max_bytes must be >= 0"):
        read_text_file(tmp_path, "a.md", max_bytes=-1)
