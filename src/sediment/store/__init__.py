"""Layers and layer sets: precedence, schema compatibility, locked atomic appends."""

from sediment.store.backend import LayerStore, LayerSummary
from sediment.store.commit import New, NewChunk
from sediment.store.layers import (
    AGENT_WRITABLE,
    FILE_NAMES,
    HUMAN_WRITABLE,
    PRECEDENCE,
    LayerName,
)
from sediment.store.layerset import LayerSet, OpenLayer, Schema

__all__ = [
    "AGENT_WRITABLE",
    "FILE_NAMES",
    "HUMAN_WRITABLE",
    "PRECEDENCE",
    "LayerName",
    "LayerSet",
    "LayerStore",
    "LayerSummary",
    "New",
    "NewChunk",
    "OpenLayer",
    "Schema",
]
