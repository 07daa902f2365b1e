"""Services every adapter calls: search and write (compile lives in ``sediment.ingest``)."""

from sediment.ops.query import run_search
from sediment.ops.write import WriteRequest, write_context

__all__ = ["WriteRequest", "run_search", "write_context"]
