"""Files that are not files (issue 15, item 17): every command that writes a path is run
on a FIFO and on a character device made by the test. Such a target is written in place
(or refused with a clear error), never renamed over; ``--out -`` is standard output."""

from __future__ import annotations

import os
import select
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from sediment.format import LayerFile
from sediment.search.ann import index_metric, index_path, rows_key
from sediment.store import HUMAN_WRITABLE, LayerName, LayerSet, NewChunk
from tests import zygote
from tests.cli.conftest import Runner

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")


def char_device(path: Path) -> Path:
    """A character device like /dev/null (same major and minor), made under tmp_path."""
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return path


def assert_kind(path: Path, test: object) -> None:
    assert test(os.lstat(path).st_mode), f"{path} is no longer what it was"  # type: ignore[operator]


@contextmanager
def fifo_reader(path: Path) -> Iterator[list[bytes]]:
    """A FIFO at ``path`` with a reader already attached; yields what it has read once the
    writer closed it."""
    os.mkfifo(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    got: list[bytes] = []
    done = threading.Event()

    def read() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not done.is_set():
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            data = os.read(fd, 1 << 16)
            if data:
                got.append(data)
            elif got:
                return
            else:
                time.sleep(0.05)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        thread.join(timeout=60)
        done.set()
        os.close(fd)
    assert_kind(path, stat.S_ISFIFO)


@pytest.fixture
def repo(sediment: Runner, tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "guide.md").write_text("# Guide\n\nDeploys run nightly.\n\n## Rollback\n\nUse helm.\n")
    r = sediment("compile", "--root", str(root), "--include", "*.md", "--out",
                 str(root / "AGENTS.db"))
    assert r.code == 0, r.err
    base = LayerFile.open(root / "AGENTS.db")
    ls = LayerSet.from_directory(root)
    ls.append(LayerName.USER, [NewChunk("note", "A user note.", "human", 1.0)],
              np.ones((1, base.dim), dtype=np.float32) / np.sqrt(base.dim),
              profile=base.embedding_profile, allowed=HUMAN_WRITABLE)
    r = sediment("keygen", "--out", str(root / "key"))
    assert r.code == 0, r.err
    return root


def writers(root: Path, out: Path) -> dict[str, tuple[str, ...]]:
    """Each command that writes a path the user names, writing to ``out``."""
    return {
        "compile": ("compile", "--root", str(root), "--include", "*.md", "--out", str(out)),
        "compact": ("compact", "--dir", str(root), "--out", str(out)),
        "export": ("export", str(root / "AGENTS.db"), "--out", str(out)),
        "sign": ("sign", str(root / "AGENTS.db"), "--key", str(root / "key"), "--out",
                 str(out)),
    }


@pytest.mark.parametrize("command", ["compile", "compact", "export", "sign"])
def test_written_in_place_to_a_fifo(sediment: Runner, repo: Path, command: str) -> None:
    target = repo / "out.fifo"
    with fifo_reader(target) as got:
        r = sediment(*writers(repo, target)[command])
    assert r.code == 0, r.err
    data = b"".join(got)
    assert data
    if command in ("compile", "compact"):
        assert LayerFile.from_bytes(data).chunk_count > 0
    assert not list(repo.glob(".out.fifo.*"))


@root_only
@pytest.mark.parametrize("command", ["compile", "compact", "export", "sign"])
def test_written_in_place_to_a_character_device(sediment: Runner, repo: Path,
                                                command: str) -> None:
    target = char_device(repo / "null")
    r = sediment(*writers(repo, target)[command])
    assert r.code == 0, r.err
    assert_kind(target, stat.S_ISCHR)


@pytest.mark.parametrize("command", ["compile", "compact", "sign"])
def test_out_dash_is_stdout(repo: Path, command: str) -> None:
    import subprocess

    from tests.cli.conftest import SEDIMENT

    args = writers(repo, Path("-"))[command]
    p = subprocess.run([zygote.script(str(SEDIMENT)), *args], capture_output=True, timeout=120,
                       env={**os.environ, "SEDIMENT_EMBEDDER": "hash"}, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    if command == "sign":
        assert len(p.stdout) == 64
    else:
        assert LayerFile.from_bytes(p.stdout).chunk_count > 0
    assert p.stderr  # the report goes to stderr, not into the data
    assert not (repo / "-").exists()


def test_dev_stdout_on_a_pipe_is_written_not_replaced(sediment: Runner, repo: Path) -> None:
    r = sediment("export", str(repo / "AGENTS.db"), "--out", "/dev/stdout")
    assert r.code == 0, r.err
    assert r.out.startswith("{") and "Deploys run nightly" in r.out
    assert os.path.islink("/dev/stdout")


def test_a_fifo_nobody_reads_is_an_error_not_a_hang(sediment: Runner, repo: Path) -> None:
    target = repo / "lonely.fifo"
    os.mkfifo(target)
    r = sediment(*writers(repo, target)["export"], timeout=60)
    assert r.code == 1 and "no process is reading" in r.err
    assert_kind(target, stat.S_ISFIFO)


@root_only
def test_keygen_refuses_a_device(sediment: Runner, tmp_path: Path) -> None:
    target = char_device(tmp_path / "null")
    for extra in ((), ("--force",)):
        r = sediment("keygen", "--out", str(target), *extra)
        assert r.code == 1 and "not a regular file" in r.err, r.err
        assert_kind(target, stat.S_ISCHR)


def test_keygen_refuses_a_fifo_and_stdout(sediment: Runner, tmp_path: Path) -> None:
    target = tmp_path / "key.fifo"
    os.mkfifo(target)
    r = sediment("keygen", "--out", str(target), "--force")
    assert r.code == 1 and "not a regular file" in r.err
    assert_kind(target, stat.S_ISFIFO)
    assert sediment("keygen", "--out", "-").code == 1


def test_kcp_init_refuses_a_fifo_manifest(sediment: Runner, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n")
    os.mkfifo(tmp_path / "knowledge.yaml")
    r = sediment("kcp", "init", "--root", str(tmp_path), "--force", timeout=60)
    assert r.code == 1 and "is a FIFO" in r.err
    assert_kind(tmp_path / "knowledge.yaml", stat.S_ISFIFO)


@root_only
def test_index_build_refuses_a_device_at_the_index_path(sediment: Runner, repo: Path) -> None:
    f = LayerFile.open(repo / "AGENTS.db")
    rows = f.embedding_info.rows
    target = index_path(repo / "AGENTS.db", rows_key(f, rows), rows, index_metric(f))
    char_device(target)
    r = sediment("index", "build", str(repo / "AGENTS.db"), "--min-rows", "1", timeout=60)
    assert r.code == 1 and "not a regular file" in r.err, r.err
    assert_kind(target, stat.S_ISCHR)


def test_reading_a_fifo_as_a_layer_is_an_error_not_a_hang(sediment: Runner,
                                                           tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "AGENTS.db")
    for args in (("inspect", str(tmp_path / "AGENTS.db")),
                 ("search", "x", "--dir", str(tmp_path))):
        r = sediment(*args, timeout=60)
        assert r.code == 1 and "not a regular file" in r.err, r.err
