"""The one cache of data derived from a layer file, kept while the file is open.

A :class:`~sediment.format.LayerFile` never changes (a write makes a new file), so whatever
is computed from it (its event chunks, its search index, its KCP units) stays true for as
long as the object lives, and dies with it: entries are held per file in a weak mapping.
Every package that derives per-file data asks here, under a key of its own, so there is
one place that holds such data and one rule for how long it lives. Lives in ``store``, the
lowest package that needs it, so that search and the domain packages above can share it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, TypeVar, cast

from sediment.format import LayerFile

T = TypeVar("T")

_FILES: weakref.WeakKeyDictionary[LayerFile, dict[Hashable, Any]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def derived(f: LayerFile, key: Hashable, build: Callable[[LayerFile], T]) -> T:
    """The value stored for ``f`` under ``key``, built by ``build(f)`` on first use.

    ``build`` runs outside the lock (it may take seconds); if two threads race, both build
    and the first to finish is the one everyone gets. Keys of different users must not
    collide: use a type, or a tuple that starts with a name of the user's own."""
    entries = _FILES.get(f)
    if entries is not None:
        try:
            return cast(T, entries[key])
        except KeyError:
            pass
    value = build(f)
    with _LOCK:
        entries = _FILES.get(f)
        if entries is None:
            entries = _FILES[f] = {}
        return cast(T, entries.setdefault(key, value))
