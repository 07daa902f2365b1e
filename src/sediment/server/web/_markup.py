"""Untrusted text for a proposal's page: Markdown rendered and sanitised, and word diffs.

Agents write chunk contents, so nothing they write becomes markup by itself: control,
bidirectional and invisible characters are first shown as escapes (``format.visible``),
markdown-it-py renders with raw HTML off, and nh3 (the ammonia sanitiser) keeps only a
small set of text tags and safe link schemes. Images are dropped (the page's CSP would block
remote ones anyway). Very long texts are rendered in part, with the rest left out and said.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

from sediment.format.visible import visible

MAX_RENDER = 200_000
"""Characters rendered as Markdown; a longer text shows its start and says how long it is."""
MAX_DIFF_WORDS = 20_000
TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code",
        "pre", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th",
        "td"}
_MD = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
_MD.enable("strikethrough")


@dataclass(frozen=True, slots=True)
class Rendered:
    html: Markup
    shown: int
    total: int

    @property
    def cut(self) -> bool:
        return self.shown < self.total


def markdown(text: str, limit: int = MAX_RENDER) -> Rendered:
    """``text`` as sanitised HTML (headings shifted down two levels under the page's own)."""
    part = text[:limit]
    html = _MD.render(visible(part, keep_lines=True))
    html = re.sub(r"<(/?)h([1-6])>", lambda m: f"<{m.group(1)}h{min(6, int(m.group(2)) + 2)}>",
                  html)
    clean = nh3.clean(html, tags=TAGS, attributes={"a": {"href", "title"}, "th": {"align"},
                                                   "td": {"align"}, "code": set()},
                      url_schemes={"http", "https", "mailto"},
                      link_rel="noopener noreferrer nofollow")
    return Rendered(Markup(clean), len(part), len(text))


@dataclass(frozen=True, slots=True)
class Segment:
    op: str  # same | del | ins
    text: str


def word_diff(old: str, new: str) -> list[Segment] | None:
    """Word-level differences from ``old`` to ``new`` (whitespace kept with its word);
    None when either is too long to compare on a page."""
    a = re.findall(r"\S+\s*|\s+", visible(old, keep_lines=True))
    b = re.findall(r"\S+\s*|\s+", visible(new, keep_lines=True))
    if max(len(a), len(b)) > MAX_DIFF_WORDS:
        return None
    out: list[Segment] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if op == "equal":
            out.append(Segment("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(Segment("del", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(Segment("ins", "".join(b[j1:j2])))
    return out
