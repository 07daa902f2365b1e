"""Agent memory: save, recall and manage memories per actor, with dedup by supersession."""

from sediment.memory.files import FileMemoryStore
from sediment.memory.guidelines import MEMORY_GUIDELINES
from sediment.memory.model import CATEGORIES, Memory, MemoryRef, Scope
from sediment.memory.relevance import DEFAULT_MIN_SCORE
from sediment.memory.service import DEFAULT_DEDUP_THRESHOLD, MAX_LIMIT, MemoryService
from sediment.memory.store import MemoryStore

__all__ = [
    "CATEGORIES",
    "DEFAULT_DEDUP_THRESHOLD",
    "DEFAULT_MIN_SCORE",
    "MAX_LIMIT",
    "MEMORY_GUIDELINES",
    "FileMemoryStore",
    "Memory",
    "MemoryRef",
    "MemoryService",
    "MemoryStore",
    "Scope",
]
