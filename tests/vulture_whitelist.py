"""Names vulture cannot see used, for `./run lint` (vulture src tests/vulture_whitelist.py).

Tests do not count as users: code only a test calls is dead and goes. Click commands and
MCP tools, resources and prompts are found by their decorators (see ``[tool.vulture]`` in
pyproject.toml); what is left is listed here, each with why it stays.
Importing the real objects keeps this list honest: a rename breaks it.
"""

from sediment._api import Store
from sediment.cli._app import EXIT_USAGE
from sediment.config import Environment, _MappingSource
from sediment.context.settings import ContextSettings
from sediment.format.reader import Header
from sediment.ingest.model import DocChunk
from sediment.kcp.discover import FoundManifest
from sediment.kcp.model import ManifestRef, Unit
from sediment.kcp.service import KnowledgeService
from sediment.review.provenance import SourceLines
from sediment.server.context_outputs import HistoryOut, Item, IterationOut, StatsOut, SummarizeOut
from sediment.server.memory_tools import ChangedOut, ManageOut, SaveOut, UseOut, VersionOut
from sediment.server.web._memories import Listing
from sediment.server.web._progress import Progress
from sediment.server.web._review import Row

_ = (
    EXIT_USAGE,  # documents click's own usage-error exit code beside ours
    Header.file_length,  # RFC 8.4.1 header fields, decoded for `inspect` and checks
    Header.sections_offset,
    Unit.requires_capabilities,  # KCP fields kept on the parsed model
    Unit.external_depends_on,
    ManifestRef.relationship,
    KnowledgeService.refresh,  # public: re-reads manifests in a long-running server
    SaveOut.superseded_id,  # fields of save_memory's structured result, read by clients
    SaveOut.looks_like_correction,
    SaveOut.corrects_id,
    SaveOut.superseded_content,
    ChangedOut.from_,
    VersionOut.superseded_because,  # fields of manage_memory's structured result
    UseOut.at_ms,
    ManageOut.restored_id,
    ManageOut.use_history,
    ManageOut.purged,
    Item.last_accessed,  # the context tools' structured results, read by clients
    HistoryOut.current_iteration,
    IterationOut.error_id,
    SummarizeOut.summarized,
    StatsOut.feedback,
    ChangedOut.to,
    ContextSettings.prune_after_iterations,  # the seed's setting; read from [context]
    Listing.by_category,  # read by the web page's templates
    Listing.uncategorised,
    Row.near_duplicate,
    Progress.iterations,
    Store.manage_memory,  # the Python API (docs/python-api.md): programs call them
    Store.save_memory,
    Store.relevant_context,
    DocChunk.end_line,  # the chunk's span (RFC 7.2 provenance); sources cite the first line
    FoundManifest.via,  # how discovery found a manifest: root, llms.txt or a subdirectory
    _MappingSource._load_env_vars,  # pydantic-settings' hooks: the variables to read,
    Environment.settings_customise_sources,  # the sources (read() supplies them)
    SourceLines.reads,  # files read, not served from the cache: the cache's only witness
)
