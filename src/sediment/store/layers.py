"""The four standard layers of RFC section 6: names, file names and precedence."""

from __future__ import annotations

from enum import StrEnum

from sediment.errors import ValidationError


class LayerName(StrEnum):
    BASE = "base"
    USER = "user"
    DELTA = "delta"
    LOCAL = "local"

    @property
    def file_name(self) -> str:
        return FILE_NAMES[self]

    @property
    def rank(self) -> int:
        """Higher wins: local 3 > user 2 > delta 1 > base 0 (RFC 6.2)."""
        return _RANK[self]

    @classmethod
    def parse(cls, value: str) -> LayerName:
        try:
            return cls(value.strip().lower())
        except ValueError:
            names = ", ".join(n.value for n in cls)
            raise ValidationError(f"unknown layer {value!r}: expected one of {names}") from None


FILE_NAMES = {
    LayerName.BASE: "AGENTS.db",
    LayerName.USER: "AGENTS.user.db",
    LayerName.DELTA: "AGENTS.delta.db",
    LayerName.LOCAL: "AGENTS.local.db",
}
_RANK = {LayerName.BASE: 0, LayerName.DELTA: 1, LayerName.USER: 2, LayerName.LOCAL: 3}
PRECEDENCE = (LayerName.LOCAL, LayerName.USER, LayerName.DELTA, LayerName.BASE)
"""Highest precedence first."""

AGENT_WRITABLE = (LayerName.LOCAL, LayerName.DELTA)
"""Layers the agent write path (MCP ``agents_context_write``) may append to (RFC 11.1)."""

HUMAN_WRITABLE = (LayerName.USER, LayerName.DELTA, LayerName.LOCAL)
"""Layers explicit human commands may append to; base is never written (RFC 6.1)."""
