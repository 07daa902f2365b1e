"""The click type of chunk ids (proposal ids are chunk ids too).

It parses with :func:`sediment.format.ids.parse_chunk_id`, so an option accepts exactly the
ids that MCP arguments and resource URIs accept; a bad value is a usage error (exit 2).
"""

from __future__ import annotations

from typing import Any

import click

from sediment.errors import ValidationError
from sediment.format.ids import check_chunk_id, parse_chunk_id


class ChunkIdType(click.ParamType[int]):
    name = "id"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        try:
            if isinstance(value, int):
                return check_chunk_id(value)
            return parse_chunk_id(value)
        except ValidationError as exc:
            self.fail(str(exc), param, ctx)


CHUNK_ID = ChunkIdType()


def parse_id_list(value: str, *, what: str) -> list[int]:
    """Comma-separated chunk ids (``12,15`` or ``12, 15``), each parsed strictly."""
    ids = [parse_chunk_id(x.strip(" "), what=what) for x in value.split(",") if x.strip(" ")]
    if not ids:
        raise ValidationError(f"{what}: give at least one chunk id, e.g. 12,15")
    return ids
