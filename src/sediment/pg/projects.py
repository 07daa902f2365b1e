"""The projects of a store: which exist, and the check that a named one does.

A project exists once something was written to it: layers (``push``, ``write``), memories
or context items. Naming one that does not (a typo in ``?project=``) would otherwise read
an empty project, or write into a new one, without a word; every command but ``push``
(which creates projects) and ``db`` refuses it, listing the projects there are. The
``default`` project of a store that has none yet is not refused: it is where a fresh store
starts.
"""

from __future__ import annotations

from typing import Any

import psycopg

from sediment.errors import NotFoundError
from sediment.pg.connection import DEFAULT_PROJECT

_NAMES = ("SELECT name FROM projects UNION SELECT DISTINCT project FROM memories "
          "WHERE project <> '' UNION SELECT DISTINCT project FROM context_rows")

_EXISTS = ("SELECT EXISTS (SELECT 1 FROM projects WHERE name = %s) "
           "OR EXISTS (SELECT 1 FROM memories WHERE project = %s) "
           "OR EXISTS (SELECT 1 FROM context_rows WHERE project = %s)")


def project_names(conn: psycopg.Connection[Any]) -> list[str]:
    """Every project of the store, in name order."""
    return sorted(str(r[0]) for r in conn.execute(_NAMES).fetchall())


def require_project(conn: psycopg.Connection[Any], project: str, where: str) -> None:
    """Raise :class:`NotFoundError` unless ``project`` exists (or is the ``default`` of
    a store without projects); ``where`` names the store for the message."""
    got = conn.execute(_EXISTS, (project, project, project)).fetchone()
    if got is not None and got[0]:
        return
    names = project_names(conn)
    if project == DEFAULT_PROJECT and not names:
        return
    have = ", ".join(names) if names else "none yet"
    raise NotFoundError(f"store {where} has no project {project!r} (projects: {have}); "
                        "check ?project= in the store URL, or create the project with "
                        "`sediment push`")
