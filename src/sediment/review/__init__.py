"""The review workflow: how humans govern what agents learn (RFC 11.2, 13, 15.4 to 15.6).

Diff a delta against base and user, inspect a chunk's provenance and history, accept or
reject proposals, promote chunks, compact base and user into a new base (and rotate the
layers above it), sign and verify layer files, export and import JSON Lines. Every state
change is an appended event; nothing is deleted, and base is never written.
"""

from sediment.errors import SignatureError
from sediment.review.compact import CompactReport, compact, merge
from sediment.review.decisions import (
    AlreadyDecided,
    DecisionView,
    Outcome,
    ProposalView,
    accept,
    accept_edited,
    get_proposal,
    list_proposals,
    promotable,
    promote,
    reject,
)
from sediment.review.diff import DEFAULT_THRESHOLD, DeltaChunk, DiffReport, Match, diff_layers
from sediment.review.jsonl import (
    ImportReport,
    Parsed,
    export_lines,
    import_file,
    parse,
)
from sediment.review.provenance import (
    ChunkReport,
    EventRecord,
    ResolvedSource,
    SourceLines,
    inspect_chunk,
    inspect_stored,
)
from sediment.review.rotate import Rotation, archive_and_reset
from sediment.review.signing import (
    keygen,
    require_signature,
    sign,
    signature_path,
    verify,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "AlreadyDecided",
    "ChunkReport",
    "CompactReport",
    "DecisionView",
    "DeltaChunk",
    "DiffReport",
    "EventRecord",
    "ImportReport",
    "Match",
    "Outcome",
    "Parsed",
    "ProposalView",
    "ResolvedSource",
    "Rotation",
    "SignatureError",
    "SourceLines",
    "accept",
    "accept_edited",
    "archive_and_reset",
    "compact",
    "diff_layers",
    "export_lines",
    "get_proposal",
    "import_file",
    "inspect_chunk",
    "inspect_stored",
    "keygen",
    "list_proposals",
    "merge",
    "parse",
    "promotable",
    "promote",
    "reject",
    "require_signature",
    "sign",
    "signature_path",
    "verify",
]
