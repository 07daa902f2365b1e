"""Progressive context for agent loops (docs/context.md)."""

from sediment.context.files import FileContextStore
from sediment.context.service import ContextLoop, inject, parse_ref, state_of
from sediment.context.settings import CONTEXT_TYPES, PRESETS, ContextSettings, resolve
from sediment.context.store import ContextStore, NewEvent, NewItem, StoredEvent, StoredItem
from sediment.context.tokens import SAFETY_MARGIN, count_tokens

__all__ = ["CONTEXT_TYPES", "PRESETS", "SAFETY_MARGIN", "ContextLoop", "ContextSettings",
           "ContextStore", "FileContextStore", "NewEvent", "NewItem", "StoredEvent",
           "StoredItem", "count_tokens", "inject", "parse_ref", "resolve", "state_of"]
