"""basic-memory's Markdown notes: front matter (``title``, ``type``, ``permalink``,
``tags``...), ``- [category] text #tag (context)`` observation lines and
``- relation_type [[Target]]`` relation lines, anywhere in the note, and free prose.

A note is an entity (its ``title``, else the file name; its ``type``, else ``note``); see
:mod:`sediment.interop.graph`. The front matter is kept as written, and the note's path,
so an export writes the note back where it was; prose paragraphs (with the heading above
them) are memories too, so nothing of a note is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath

from sediment.interop import graph
from sediment.interop.instructions import front_matter
from sediment.interop.model import Item, Reading, category_of, read_text, shown_path, walk
from sediment.memory import Memory

NAME = "basic-memory"
OBSERVATION = re.compile(r"[ \t]*[-*+][ \t]+\[([^\[\]\n]+)\][ \t]+(\S.*?)[ \t]*")
RELATION = re.compile(r"[ \t]*[-*+][ \t]+([^\[\]\s][^\[\]\n]*?)[ \t]+\[\[([^\[\]\n]+)\]\]"
                      r"(?:[ \t]+(\S.*?))?[ \t]*")
_TASK = {"", "x", "X", "-"}
_SECTIONS = {"## observations", "## relations"}
_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")
_SLUG = re.compile(r"[^a-z0-9]+")


def _notes(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return list(walk(path, lambda rel: rel.endswith(".md")))


def parse(text: str, rel: str, shown: str) -> tuple[list[Item], list[Item]]:
    """(the note's entity, everything else) of one note."""
    lines = text.split("\n")
    raw, fields, body = front_matter(lines)
    title = fields.get("title") or _first_heading(lines, body) or PurePosixPath(rel).stem
    etype = fields.get("type") or "note"
    extra: dict[str, object] = {"path": rel}
    if raw is not None:
        extra["front_matter"] = raw
    entity = graph.entity_item(NAME, f"{shown}:1", title, etype, extra)
    items: list[Item] = []
    block: list[str] = []
    start = 0
    fence: str | None = None
    seen_title = False

    def flush() -> None:
        nonlocal block
        text = "\n".join(block).strip("\n")
        if text.strip():
            items.append(graph.prose_item(NAME, f"{shown}:{start}", title, text))
        block = []

    for index in range(body, len(lines)):
        line = lines[index].rstrip("\r")
        no = index + 1
        if fence is not None:
            block.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
        if m := _FENCE.match(line):
            if not block:
                start = no
            block.append(line)
            fence = m.group(1)
            continue
        if not line.strip():
            if block and not block[-1].lstrip().startswith("#"):
                flush()
            continue
        heading = line.strip()
        if heading.lower() in _SECTIONS or (not seen_title and heading == f"# {title}"):
            seen_title = seen_title or heading.startswith("# ")
            flush()
            continue
        obs = OBSERVATION.fullmatch(line)
        if obs and obs.group(1).strip() not in _TASK:
            flush()
            cat = obs.group(1).strip()
            items.append(graph.observation_item(NAME, f"{shown}:{no}", title, obs.group(2),
                                                category_of(cat), {"category": cat}))
            continue
        link = RELATION.fullmatch(line)
        if link:
            flush()
            more = {"rest": link.group(3)} if link.group(3) else None
            items.append(graph.relation_item(NAME, f"{shown}:{no}", title,
                                             link.group(1).strip(), link.group(2).strip(),
                                             more))
            continue
        if heading.startswith("#") and block and not block[-1].lstrip().startswith("#"):
            flush()
        if not block:
            start = no
        block.append(line)
    flush()
    return [entity], items


def _first_heading(lines: list[str], start: int) -> str | None:
    """The note's ``# Title`` when it is the first line with text."""
    for line in lines[start:]:
        if line.strip():
            return line.strip()[2:].strip() if line.startswith("# ") else None
    return None


def read(path: Path, root: Path, reading: Reading) -> Iterator[Item]:
    """Every note's entity first, then their observations, relations and prose."""
    notes = _notes(path)
    base = path if path.is_dir() else path.parent
    for second in (False, True):
        for note in notes:
            shown = shown_path(note, root)
            rel = note.relative_to(base).as_posix()
            entity, rest = parse(read_text(note, shown), rel, shown)
            yield from (rest if second else entity)


def _safe(rel: object) -> str | None:
    if not isinstance(rel, str) or not rel.endswith(".md") or "\\" in rel:
        return None
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or any(part.startswith(".") for part in p.parts):
        return None
    return p.as_posix()


def _slug(title: str) -> str:
    return _SLUG.sub("-", title.lower()).strip("-")[:80] or "note"


def write(memories: Iterable[Memory]) -> dict[str, bytes]:
    """One note per entity, at the path it was read from (else its title's slug)."""
    out: dict[str, bytes] = {}
    for n in graph.build(memories, default_type="note").values():
        path = _safe(n.origin.get("path"))
        if path is None or path in out:
            path, i = f"{_slug(n.name)}.md", 1
            while path in out:
                i += 1
                path = f"{_slug(n.name)}-{i}.md"
        fm = n.origin.get("front_matter")
        if not isinstance(fm, str):
            fm = f"title: {_yaml(n.name)}\ntype: {_yaml(n.entity_type)}"
        parts = [f"---\n{fm}\n---", f"# {n.name}"]
        obs = [(c, t) for c, t in n.observations if "\n" not in t]
        parts += n.prose + [t for _, t in n.observations if "\n" in t]
        if obs:
            parts.append("## Observations\n" + "\n".join(f"- [{c}] {t}" for c, t in obs))
        if n.relations:
            parts.append("## Relations\n" + "\n".join(
                f"- {r} [[{t}]]" + (f" {n.rest[(r, t)]}" if (r, t) in n.rest else "")
                for r, t in n.relations))
        out[path] = ("\n\n".join(parts) + "\n").encode("utf-8")
    return out


def _yaml(value: str) -> str:
    """A one-line YAML scalar: quoted when it would not read back as the same text."""
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9 _.-]*", value) and not value.endswith(" "):
        return value
    quote = "'" if "'" not in value else '"'
    return quote + value.replace(quote, "") + quote
