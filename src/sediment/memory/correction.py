"""Is a new memory the same memory as an old one, and does it look like a correction?

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
_LOWER_WORD = re.compile(r"[a-z0-9]+")
_STOP_TEXT = """
a an the and or but of to in on at for with by from as is are was were be been being it its
this that these those i you he she we they me him her us them my your his our their user
users s do does did has have had will would can could should may might must not no so very
just also than then there here what which who whom whose when where why how all any each
every some more most other such only own same too about into over after before up down out
off again further once
"""
STOPWORDS = frozenset(_STOP_TEXT.split())
"""Function words (and "user", the subject of most memories) that say nothing of a fact."""
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
    first = len(text) - len(text.lstrip())
    for m in _WORD.finditer(text):
        word = m.group(0)
        before = text[max(0, m.start() - 200):m.start()]  # linear in the text's length
        starts_sentence = m.start() == first or bool(_SENTENCE_END.search(before))
        if (word[0].isupper() and not starts_sentence) or (len(word) > 1 and word.isupper()):
            out.add(word.lower())
    return out


def _negations(text: str) -> set[str]:
    words = {w.lower().replace("\u2019", "'") for w in _WORD.findall(text)}
    return {w for w in words if w in NEGATIONS or w.endswith("n't")}


def correction_signals(old: str, new: str) -> list[str]:
    """The signals (``numbers``, ``names``, ``negation``) on which ``new`` differs."""
    signals = (("numbers", _numbers), ("names", _names),
               ("negation", lambda text: bool(_negations(text))))
    return [name for name, of in signals if of(old) != of(new)]


def _stem(word: str) -> str:
    for suffix, rest in (("ing", 4), ("ed", 4), ("es", 3), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= rest:
            return word[:-len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    """The text's words that carry its facts: lower case, crudely stemmed, function words
    left out."""
    return {_stem(w) for w in _LOWER_WORD.findall(text.lower().replace("'s", ""))
            if w not in STOPWORDS}
