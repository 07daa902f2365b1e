"""Does a near-duplicate look like a correction rather than a paraphrase?

Cosine similarity cannot tell "lives in Berlin" from "lives in Munich": both are close to
the old memory. A supersession therefore records which of three cheap signals differ
between the old and the new text: numbers, names (capitalised words that do not start a
sentence, and all-caps acronyms), and negation. Only the names of the signals are stored,
never the words, so purging a memory's content leaves nothing of it in its events.
"""

from __future__ import annotations

import re

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
