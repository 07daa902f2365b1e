"""Progressive context for agent loops (docs/context.md)."""

from sediment.context.files import FileContextStore
from sediment.context.service import ContextLoop, inject, state_of
from sediment.context.settings import CONTEXT_TYPES, ContextSettings, resolve
from sediment.context.store import ContextStore, NewEvent, NewItem
from sediment.context.tokens import count_tokens

__all__ = ["CONTEXT_TYPES", "ContextLoop", "ContextSettings", "ContextStore",
           "FileContextStore", "NewEvent", "NewItem", "count_tokens", "inject", "resolve",
           "state_of"]
