"""Does a near-duplicate look like a correction rather than a paraphrase?

Cosine similarity cannot tell "lives in Berlin" from "lives in Munich": both are close to
the old memory. A supersession therefore records which of three cheap signals differ
between the old and the new text: numbers, names (capitalised words that do not start a
sentence, and all-caps acronyms), and negation. Only the names of the signals are stored,
never the words, so purging a memory's content leaves nothing of it in its events.
"""

from __future__ import annotations

import difflib
import re

SWAP_FLOOR = 0.55
"""The least cosine at which a value swap (:func:`value_swap`) counts as the same memory."""
MAX_SWAP_WORDS = 3
_TOKEN = re.compile(r"[\w'-]+(?:\.\w+)*")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'_-]*")
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")
NEGATIONS = frozenset({
    "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "cannot",
    "instead", "anymore", "longer", "stopped", "without", "avoid", "don't", "doesn't",
    "didn't", "isn't", "aren't", "wasn't", "weren't", "won't", "can't", "shouldn't",
    "mustn't", "hasn't", "haven't",
})


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def _names(text: str) -> set[str]:
    out: set[str] = set()
    for m in _WORD.finditer(text):
        word = m.group(0)
        before = text[:m.start()]
        starts_sentence = not before.strip() or bool(_SENTENCE_END.search(before))
        if (word[0].isupper() and not starts_sentence) or (len(word) > 1 and word.isupper()):
            out.add(word.lower())
    return out


def _negations(text: str) -> set[str]:
    words = {w.lower().replace("\u2019", "'") for w in _WORD.findall(text)}
    return {w for w in words if w in NEGATIONS or w.endswith("n't")}


def correction_signals(old: str, new: str) -> list[str]:
    """The signals (``numbers``, ``names``, ``negation``) on which ``new`` differs."""
    out = []
    if _numbers(old) != _numbers(new):
        out.append("numbers")
    if _names(old) != _names(new):
        out.append("names")
    if bool(_negations(old)) != bool(_negations(new)):
        out.append("negation")
    return out


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def value_swap(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` with one value replaced: a single run of at most
    ``MAX_SWAP_WORDS`` words differs on each side, and at least two words around it are
    the same ("The frontend is built with React" -> "... with Svelte").

    Cosine over the whole sentence scores such a correction low (0.54-0.68 for the value
    swaps of bench/memory_pairs.py with MiniLM), since the value is most of what a short
    fact says; the words around it show it is the same statement (docs/memory.md)."""
    a, b = _tokens(old), _tokens(new)
    changes = [op for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
               if op[0] != "equal"]
    if len(changes) != 1:
        return False
    _, i1, i2, j1, j2 = changes[0]
    return (0 < i2 - i1 <= MAX_SWAP_WORDS and 0 < j2 - j1 <= MAX_SWAP_WORDS
            and len(a) - (i2 - i1) >= 2)


def same_memory(old: str, new: str, cosine: float, threshold: float) -> bool:
    """The dedup decision: cosine at the threshold, or a value swap at ``SWAP_FLOOR``
    (dedup is off at a threshold of 1.0, swaps included)."""
    if cosine >= threshold:
        return True
    return threshold < 1.0 and cosine >= SWAP_FLOOR and value_swap(old, new)
