"""The ``depends_on`` graph: cycle breaking at parse time and prerequisite load order.

KCP 4.7: parsers MUST detect cycles and silently ignore the edge that would close one. Which
edge that is depends on traversal order, so it is fixed here: depth-first from each unit in
declaration order, following its ``depends_on`` in the order written; an edge to a unit
still on the current path closes a cycle and is dropped (a self-dependency included).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

__all__ = ["break_cycles", "load_order"]

K = TypeVar("K", bound=Hashable)


def break_cycles(order: Sequence[K], edges: Mapping[K, Sequence[K]]
                 ) -> tuple[dict[K, list[K]], list[tuple[K, K]]]:
    """Acyclic edges (same order as given) and the dropped cycle-closing edges."""
    kept: dict[K, list[K]] = {k: [] for k in order}
    dropped: list[tuple[K, K]] = []
    state: dict[K, int] = {}  # 1 on the current path, 2 done
    for start in order:
        if state.get(start):
            continue
        state[start] = 1
        stack: list[tuple[K, int]] = [(start, 0)]
        while stack:
            node, i = stack[-1]
            targets = edges.get(node, ())
            if i == len(targets):
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, i + 1)
            target = targets[i]
            if target not in kept:
                continue
            if state.get(target) == 1:
                dropped.append((node, target))
                continue
            kept[node].append(target)
            if not state.get(target):
                state[target] = 1
                stack.append((target, 0))
    return kept, dropped


def load_order(roots: Iterable[K], prerequisites: Callable[[K], Sequence[K]]) -> list[K]:
    """Every root with its transitive prerequisites, each prerequisite before what needs it.

    Roots keep their relative order; a key appears once. A cycle that slipped through
    (events from different compiles) is cut where it is met, never looped on.
    """
    out: list[K] = []
    done: set[K] = set()
    for root in roots:
        if root in done:
            continue
        on_path = {root}
        stack: list[tuple[K, int]] = [(root, 0)]
        while stack:
            node, i = stack[-1]
            deps = prerequisites(node)
            if i == len(deps):
                stack.pop()
                on_path.discard(node)
                if node not in done:
                    done.add(node)
                    out.append(node)
                continue
            stack[-1] = (node, i + 1)
            dep = deps[i]
            if dep not in done and dep not in on_path:
                on_path.add(dep)
                stack.append((dep, 0))
    return out
