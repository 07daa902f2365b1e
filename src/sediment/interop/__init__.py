"""Peers' formats in and out: agent instruction files, the MCP memory server's knowledge
graph, mem0 exports and basic-memory notes (docs/import-export.md).

Each format is a reader (file or directory -> :class:`~sediment.interop.model.Item`) and
a writer (memories -> bytes), one module each; :mod:`importer` saves items through the
memory service, :mod:`exporter` writes what a writer returns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sediment.interop import basic_memory, instructions, mcp_memory, mem0
from sediment.interop.exporter import gather, write_tree
from sediment.interop.importer import ImportReport, Reader, run_import
from sediment.interop.model import FormatError, Item
from sediment.memory import Memory as _Memory


@dataclass(frozen=True, slots=True)
class Format:
    name: str
    read: Reader
    write: Callable[[Iterable[_Memory]], bytes | dict[str, bytes]]
    """One file's bytes, or a directory's files by path."""
    default_scope: str
    # the CLI's --from/--to choices are sediment.cli._export.FORMATS (a test keeps them equal)


FORMATS = {f.name: f for f in (
    *(Format(name, instructions.reader(name), instructions.writer(name), "project")
      for name in instructions.KINDS),
    Format("mcp-memory", mcp_memory.read, mcp_memory.write, "user"),
    Format("mem0", mem0.read, mem0.write, "user"),
    Format("basic-memory", basic_memory.read, basic_memory.write, "user"),
)}

__all__ = ["FORMATS", "Format", "FormatError", "ImportReport", "Item", "gather",
           "run_import", "write_tree"]
