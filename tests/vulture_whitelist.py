"""Names vulture cannot see used, for `./run lint` (vulture src tests tests/vulture_whitelist.py).

Click commands, MCP resources and pytest fixtures are found by their decorators (see
``[tool.vulture]`` in pyproject.toml); what is left is listed here, each with why it stays.
Importing the real objects keeps this list honest: a rename breaks it.
"""

from uvicorn import Server

from sediment._api import Store
from sediment.cli._app import EXIT_USAGE
from sediment.context.settings import ContextSettings
from sediment.format.reader import Header
from sediment.kcp.model import ManifestRef, Unit
from sediment.kcp.service import KnowledgeService
from sediment.server.memory_tools import ChangedOut, SaveOut
from sediment.server.web._memories import Listing
from sediment.server.web._progress import Progress
from tests.auth.test_oidc_server import Storage

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
    SaveOut.superseded_content,
    ChangedOut.from_,
    ChangedOut.to,
    ContextSettings.prune_after_iterations,  # the seed's setting; read from [context]
    Listing.by_category,  # read by the web page's templates
    Listing.uncategorised,
    Progress.iterations,
    Server.should_exit,  # uvicorn reads it: how a test stops a server run in a thread
    Store.manage_memory,  # the Python API (docs/python-api.md): programs call it
    Storage.get_tokens,  # the MCP SDK's TokenStorage protocol, called by its OAuth client
    Storage.set_tokens,
    Storage.get_client_info,
    Storage.set_client_info,
)
