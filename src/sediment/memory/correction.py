"""Is a new memory the same memory as an old one, and does it look like a correction?

Cosine similarity cannot tell "lives in Berlin" from "lives in Munich": both are close to
the old memory. A supersession therefore records which of three cheap signals differ
between the old and the new text: numbers, names (capitalised words that do not start a
sentence, and all-caps acronyms), and negation. Only the names of the signals are stored,
never the words, so purging a memory's content leaves nothing of it in its events.
"""

from __future__ import annotations

import difflib
import re

NEAR_IDENTICAL = 0.95
"""The cosine at which two memories are the same whatever words changed (a restatement)."""
MAX_CHANGED_WORDS = 4
"""Below ``NEAR_IDENTICAL``, the most content words one side may have that the other lacks
(fitted on half of bench/memory_pairs.py, see docs/memory.md)."""
SWAP_FLOOR = 0.55
"""The least cosine at which a value swap (:func:`value_swap`) counts as the same memory."""
MAX_SWAP_WORDS = 3
_TOKEN = re.compile(r"[\w'-]+(?:\.\w+)*")
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


def changed_words(old: str, new: str) -> int:
    """How many content words one text has that the other lacks (the larger side)."""
    a, b = content_words(old), content_words(new)
    return max(len(a - b), len(b - a))


def same_memory(old: str, new: str, cosine: float, threshold: float,
                max_changed: int = MAX_CHANGED_WORDS) -> bool:
    """The dedup decision. Cosine is the gate, and says too little alone: two statements
    about the same person and subject score as high as a paraphrase. So a new memory is the
    same memory as the old one when

    - the cosine reaches the threshold and at most ``max_changed`` content words differ
      (a restatement rewords a few words; a related statement brings its own), or
    - the cosine reaches ``NEAR_IDENTICAL`` (the threshold, if higher), or
    - it is a value swap at ``SWAP_FLOOR`` or above (a correction of one value).

    A threshold of 1.0 turns dedup off (only identical text is the same memory)."""
    if cosine >= max(threshold, NEAR_IDENTICAL):
        return True
    if threshold >= 1.0:
        return False
    if cosine >= threshold and changed_words(old, new) <= max_changed:
        return True
    return cosine >= SWAP_FLOOR and value_swap(old, new)
