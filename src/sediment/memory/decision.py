"""What a new memory is to an old one: the same fact restated, the same fact corrected or
updated, a different fact about the same subject, or unrelated.

Cosine similarity alone cannot say: "Deploys to staging happen on Tuesdays" and "Deploys
to production happen on Thursdays" score as close as a paraphrase, and so do "The frontend
uses React" and "... Svelte", yet the first pair is two facts and the second one fact
updated. The difference is in the structure of the two sentences: when the words are
aligned, an update changes one run of words (the value) and keeps the rest (the slot),
while a different fact changes the slot too, or says something else about the subject.

The decision is rules over that alignment, the cosine, and what the saver says:

- a contrast ("..., not Max", "instead of black", "rather than X", "no longer X") names
  the old value; when the old memory holds it, the new one corrects that memory;
- negating the same statement ("Use pytest" -> "Do not use pytest") corrects it;
- a save of category ``correction`` or source ``corrected`` (``correcting``) is looked at
  more widely: a value swap on a many-valued attribute ("speaks French") counts, and so
  does a changed value among more words;
- otherwise one changed run of at most ``MAX_SWAP_WORDS`` words is an update of that
  value, unless the attribute holds many values ("speaks", "is allergic to") or the new
  text says it adds one ("also", "another"): then both are kept;
- a changed word before an unchanged value ("manager" -> "mentor" of "Linda Chen") changes
  the slot, not the value: both are kept;
- the same content words, the old words with a few added, or a high cosine with no value
  (number, name) changed and few content words changed, is a restatement.

Why rules and not a model: no package on PyPI ships a natural-language-inference
cross-encoder's weights for onnxruntime (docs/memory.md, "The save decision"), and
nothing may download weights at run time. ``PARAPHRASE_COSINE`` and ``PARAPHRASE_WORDS``
were fitted on the fit half of bench/data/memory_pairs.jsonl (``python -m
bench.memory_decisions --fit``); the other constants were set by hand.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from enum import StrEnum

from sediment.memory.correction import STOPWORDS, correction_signals

PARAPHRASE_COSINE = 0.72
"""The least cosine at which a rewording with no changed value is a restatement."""
PARAPHRASE_WORDS = 3
"""At most this many content words one side has that the other lacks, in a restatement."""
NEAR_IDENTICAL = 0.95
"""The cosine at which two texts with the same values are one fact whatever the words."""
MAX_SWAP_WORDS = 3
"""The longest run of words an update changes (the value); a correcting save allows more."""
CORRECTING_SWAP_WORDS = 6
MAX_ALIGNED = 200
"""Longer texts are not aligned word by word (a quadratic cost in a save): they are one
fact only at ``NEAR_IDENTICAL``."""
SWAP_FLOOR = 0.30
"""The least cosine of an update (a swapped value is most of a short fact)."""

_WORD = re.compile(r"[\w][\w'\u2019./:@#-]*[\w]|[\w]")
_LOWER = re.compile(r"[a-z0-9]+")
_END = r"(?=[,;!?)\]]|[.:](?:\s|$)|\s+(?:and|but|so|because|which)\b|$)"
_CONTRAST = [
    re.compile(r"(?:[,;(\u2014]\s*|\s-\s*)(?:and\s+|but\s+)?not\s+(?:the\s+|a\s+|an\s+)?"
               r"(?P<x>[^,;!?()]{1,60}?)" + _END + r"\)?", re.I),
    re.compile(r"\b(?:instead\s+of|rather\s+than|in\s+place\s+of|no\s+longer|"
               r"not\s+anymore|replacing|replaced)\s+(?:the\s+|a\s+|an\s+)?"
               r"(?P<x>[^,;!?()]{1,60}?)" + _END, re.I),
]
_LEADING = re.compile(r"^\s*(?:actually|correction|in\s+fact|no|wrong|update|"
                      r"to\s+correct\s+that|sorry)\b[\s,:;.!-]*", re.I)
UPDATE_WORDS = frozenset({"now", "actually", "anymore", "currently", "switched", "changed",
                          "moved", "renamed", "updated", "corrected", "longer", "instead"})
"""Words that say the new text replaces an old value; they are left out of the alignment."""
ADDING_WORDS = frozenset({"also", "too", "another", "second", "additionally", "both"})
"""Words that say the new text adds a value beside the old one."""
MANY_VALUED = frozenset({
    "speak", "speaks", "know", "knows", "like", "likes", "love", "loves", "enjoy", "enjoys",
    "own", "owns", "has", "have", "allergic", "visit", "visited", "visits", "play", "plays",
    "collect", "collects", "afraid", "fear", "fears", "read", "reads", "watch", "watches",
    "fluent", "member",
    "contributes", "maintains", "follows", "supports", "hates", "dislikes", "avoids",
    "friend", "friends", "sibling", "siblings", "children", "kids", "hobbies", "hobby",
})
"""Attributes that hold several values at once: a swapped value there is another fact."""
_NEGATION = frozenset({
    "not", "no", "never", "nobody", "nothing", "none", "neither", "don't", "doesn't",
    "didn't", "isn't", "aren't", "won't", "can't", "cannot", "shouldn't", "mustn't", "avoid",
    "without", "wasn't", "weren't", "hasn't", "haven't", "nor",
})


class Verdict(StrEnum):
    RESTATEMENT = "restatement"
    CORRECTION = "correction"
    DIFFERENT = "different"
    UNRELATED = "unrelated"


@dataclass(frozen=True, slots=True)
class Decision:
    """A verdict, why (``reason``), and for a correction the words that changed."""

    verdict: Verdict
    reason: str
    old_value: str = ""
    new_value: str = ""
    signals: list[str] = field(default_factory=list)

    @property
    def supersedes(self) -> bool:
        return self.verdict in (Verdict.RESTATEMENT, Verdict.CORRECTION)


@dataclass(frozen=True, slots=True)
class _Said:
    core: str
    contrasted: tuple[str, ...]
    explicit: bool


def normalise(text: str) -> str:
    """Case and whitespace folded, trailing punctuation dropped: identical re-saves."""
    return " ".join(text.lower().split()).rstrip(" .!")


def _parse(text: str) -> _Said:
    """The text without its correction cues, and the values it says it replaces."""
    explicit = bool(_LEADING.match(text))
    core = _LEADING.sub("", text)
    named: list[str] = []
    for pattern in _CONTRAST:
        named.extend(m.group("x").strip() for m in pattern.finditer(core))
        core = pattern.sub(" ", core)
    return _Said(" ".join(core.split()), tuple(named), explicit)


def _stem(word: str) -> str:
    if word in ("my", "me", "i", "mine", "we", "our", "us"):
        return "user"
    for suffix, rest in (("ing", 4), ("ied", 3), ("ies", 3), ("ed", 3), ("es", 4), ("s", 3)):
        if word.endswith(suffix) and len(word) - len(suffix) >= rest:
            stem = word[:-len(suffix)]
            return stem + "y" if suffix in ("ied", "ies") else stem
    return word


def _words(text: str) -> list[str]:
    return [w.lower().replace("\u2019", "'") for w in _WORD.findall(text)]


def _content(words: list[str]) -> list[str]:
    return [_stem(part) for w in words for part in _LOWER.findall(w.removesuffix("'s"))
            if part not in STOPWORDS and part not in UPDATE_WORDS and part != "user"
            and part not in _NEGATION]


def _values(text: str) -> set[str]:
    """Numbers and names (capitalised words that do not start the text, acronyms, number
    words), stemmed like content words: what a restatement must keep."""
    out: set[str] = set()
    for i, w in enumerate(_WORD.findall(text)):
        low = w.lower()
        if any(c.isdigit() for c in w) or low in _NUMBER_WORDS or any(
                c in w[1:-1] for c in "_/.:@#") or any(c.isupper() for c in w[1:]) or (
                w[0].isupper() and i > 0) or (
                len(w) > 1 and w.isupper()):
            out.update(_content([low]))
    return out


_NUMBER_WORDS = frozenset({
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    "ten", "eleven", "twelve", "first", "second", "third", "last", "double",
    "once", "twice",
})


def _subject_swap(a: list[str], b: list[str]) -> bool:
    """Whether the texts start with different names before the same word ("Bob reviews"
    / "Carol reviews"): a capitalised first word is a value only then."""
    return len(a) > 1 and len(b) > 1 and a[0] != b[0] and a[1] == b[1] \
        and _name_like(a[0]) and _name_like(b[0])


def _name_like(word: str) -> bool:
    """Whether a capitalised first word may be a name ("Bob reviews"), not an ordinary
    word that starts a sentence ("Deploys happen", "Use pytest")."""
    return word not in STOPWORDS and word not in UPDATE_WORDS and word not in _STARTERS \
        and not word.endswith(("s", "ing", "ed", "ly"))


_STARTERS = frozenset({
    "always", "never", "use", "prefer", "call", "write", "run", "deploy", "keep", "put",
    "make", "add", "avoid", "format", "name", "store", "send", "ask", "check", "let",
    "every", "each", "our", "one", "two", "new", "please", "don't", "note", "remember",
})


def _negative(words: list[str]) -> bool:
    return any(w in _NEGATION or w.endswith("n't") for w in words)


def decide(old: str, new: str, cosine: float, *, correcting: bool = False,
           paraphrase_cosine: float = PARAPHRASE_COSINE,
           paraphrase_words: int = PARAPHRASE_WORDS) -> Decision:
    """The verdict on ``new`` against ``old`` (``cosine`` their embeddings' similarity;
    ``correcting`` when the save is a correction by category or source; the two
    paraphrase parameters are the fitted ones unless a benchmark varies them)."""
    said = _parse(new)
    correcting = correcting or said.explicit
    old_words, new_words = _words(old), _words(said.core)
    if max(len(old_words), len(new_words)) > MAX_ALIGNED:
        if cosine >= NEAR_IDENTICAL:
            return Decision(Verdict.RESTATEMENT, "long texts, near identical")
        return Decision(Verdict.DIFFERENT, "long texts: only a near-identical one is the same")
    a, b = _content(old_words), _content(new_words)
    sa, sb = set(a), set(b)
    shared = sa & sb
    only_old, only_new = sa - sb, sb - sa
    signals = correction_signals(old, said.core)
    if not shared:
        return Decision(Verdict.UNRELATED, "no content word in common")
    named = {w for x in said.contrasted for w in _content(_words(x))}
    low_old, low_core = normalise(old), normalise(said.core)
    if named & only_old or any(_holds(low_old, x) and not _holds(low_core, x)
                               for x in said.contrasted):
        return Decision(Verdict.CORRECTION, "names the old value it replaces",
                        _phrase(old_words, named & only_old),
                        " ".join(sorted(only_new)), signals or ["names"])
    adding = bool(set(new_words) & ADDING_WORDS) and not correcting
    flipped = _negative(old_words) != _negative(new_words)
    if flipped and not only_old and len(only_new) <= 3 and not adding:
        return Decision(Verdict.CORRECTION, "negates the same statement", "", "",
                        signals or ["negation"])
    if not only_old and not only_new and not flipped:
        return Decision(Verdict.RESTATEMENT, "the same content words")
    seq_old = [w for w in old_words if w not in UPDATE_WORDS]
    seq_new = [w for w in new_words if w not in UPDATE_WORDS]
    ops = difflib.SequenceMatcher(a=seq_old, b=seq_new, autojunk=False).get_opcodes()
    runs = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in ops if tag != "equal"]
    most = CORRECTING_SWAP_WORDS if correcting else MAX_SWAP_WORDS
    if len(runs) == 1 and cosine >= SWAP_FLOOR and not adding:
        i1, i2, j1, j2 = runs[0]
        kept = len(seq_old) - (i2 - i1)
        changed = set(_content(seq_old[i1:i2])) != set(_content(seq_new[j1:j2]))
        balanced = correcting or abs((i2 - i1) - (j2 - j1)) <= 1
        if 0 < i2 - i1 <= most and 0 < j2 - j1 <= most and kept >= 2 and changed \
                and balanced:
            before, after = " ".join(seq_old[i1:i2]), " ".join(seq_new[j1:j2])
            values = _values(old)
            swapped = values & set(_content(seq_old[i1:i2]))
            many = bool(set(seq_old[:i1]) & MANY_VALUED) and not any(
                c.isdigit() for c in before)
            new_values = _values(said.core) & set(_content(seq_new[j1:j2]))
            slot = bool(values) and not swapped and not (values - sb) and not new_values \
                and i2 < len(seq_old)
            slot = slot or (bool(swapped) and not new_values
                            and not any(c.isdigit() for c in after))
            if correcting or not (many or slot):
                return Decision(Verdict.CORRECTION, "one value changed", before, after,
                                signals or ["value"])
            return Decision(Verdict.DIFFERENT, "another value of a many-valued attribute")
    if not only_old and not flipped and not adding and len(only_new) <= paraphrase_words \
            and cosine >= paraphrase_cosine:
        return Decision(Verdict.RESTATEMENT, "the same statement with a detail added")
    values_same = not ((_values(old) - sb) | (_values(said.core) - sa)) and not flipped \
        and not _subject_swap(old_words, new_words)
    small = max(len(only_old), len(only_new)) <= paraphrase_words
    if values_same and not adding and (cosine >= NEAR_IDENTICAL
                                       or (cosine >= paraphrase_cosine and small)):
        return Decision(Verdict.RESTATEMENT, "a rewording with the same values")
    return Decision(Verdict.DIFFERENT, "a different statement about the same subject")


def _holds(text: str, phrase: str) -> bool:
    p = normalise(phrase)
    return bool(p) and re.search(r"(?<![\w])" + re.escape(p) + r"(?![\w])", text) is not None


def _phrase(words: list[str], keep: set[str]) -> str:
    return " ".join(w for w in words if _content([w]) and set(_content([w])) <= keep)
