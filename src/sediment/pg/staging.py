"""Files a ``pull`` writes, built beside their targets and put in place together.

A pull writes several files (the project's layers, an actor's own memory files). Writing
each in place as it is built would leave a half-written directory when a later one fails
(the server goes away, a file is refused), so every file is first written whole to a
temporary beside its target (the name :func:`~sediment.store.atomic.remove_stale_temporaries`
recognises) and only once all of them are built are they renamed into place, one
``rename`` each. A failure before that removes the temporaries and leaves every target as
it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from types import TracebackType

from sediment.errors import SedimentError
from sediment.store.atomic import fsync_dir


class Staging:
    """Whole files waiting beside their targets; :meth:`commit` puts them all in place."""

    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []

    def write(self, path: Path, data: bytes | bytearray | memoryview) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                                       dir=path.parent)
        except OSError as exc:
            raise SedimentError(f"{path}: cannot create a temporary file in {path.parent}: "
                                f"{exc.strerror}") from exc
        self._pending.append((Path(tmp), path))
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o644)
        except OSError as exc:
            raise SedimentError(f"{path}: write failed: {exc.strerror or exc}") from exc

    def commit(self) -> None:
        """Rename every staged file over its target, then make the renames durable. A
        target that cannot be replaced (a directory of that name) is found before any
        rename, so the pull fails with every target as it was."""
        for _, path in self._pending:
            if path.is_dir():
                self.discard()
                raise SedimentError(f"{path} is a directory; a layer file cannot replace "
                                    "it (nothing was written)")
        pending, self._pending = self._pending, []
        for n, (tmp, path) in enumerate(pending):
            try:
                os.replace(tmp, path)
            except OSError as exc:
                for rest, _ in pending[n:]:
                    with contextlib.suppress(OSError):
                        os.unlink(rest)
                done = ", ".join(str(p) for _, p in pending[:n]) or "none"
                raise SedimentError(f"{path}: cannot put the pulled file in place: "
                                    f"{exc.strerror or exc} (already replaced: {done})"
                                    ) from exc
        for directory in {path.parent for _, path in pending}:
            fsync_dir(directory)

    def discard(self) -> None:
        pending, self._pending = self._pending, []
        for tmp, _ in pending:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 _tb: TracebackType | None) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()
