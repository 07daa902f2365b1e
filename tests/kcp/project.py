"""A small documented project with a knowledge.yaml, shared by the search-side tests."""

from __future__ import annotations

from pathlib import Path

from sediment.embed import HashEmbedder
from sediment.kcp import KcpPlan
from sediment.store import LayerSet
from tests.kcp.helpers import compile_project, write_tree

EMB = HashEmbedder(dim=64)

MANIFEST = """\
kcp_version: "0.14"
project: Acme Platform
version: "1.2.0"
units:
  - id: overview
    path: docs/overview.md
    intent: "What is the Acme platform and how is it organised?"
    scope: global
    audience: [human, agent]
  - id: cluster
    path: docs/cluster.md
    intent: "How is the Kubernetes cluster set up?"
    scope: project
    audience: [operator, agent]
    depends_on: [overview]
  - id: deploy-v2
    path: docs/deploy-v2.md
    intent: "How were releases shipped in version 2?"
    scope: project
    audience: [operator, agent]
    deprecated: true
  - id: deploy-v3
    path: docs/deploy-v3.md
    intent: "How do I ship version 3 to production?"
    scope: project
    audience: [devops, agent]
    supersedes: deploy-v2
    depends_on: [cluster]
    triggers: [rollout, release train]
  - id: auth
    path: docs/auth.md
    intent: "How do I authenticate API requests?"
    scope: module
    audience: [developer]
    triggers: [oauth2, bearer-token]
"""

DOCS = {
    "knowledge.yaml": MANIFEST,
    "docs/overview.md": "# Overview\n\nAcme runs services for shops on one platform.\n",
    "docs/cluster.md": "# Cluster\n\nThe cluster has three node pools and an ingress.\n",
    "docs/deploy-v2.md": "# Deploy (v2)\n\nTo deploy to production, deploy the deploy "
                         "bundle with the production deploy script.\n",
    "docs/deploy-v3.md": "# Deploy\n\nShip to production with the pipeline; deploy "
                         "happens on merge.\n",
    "docs/auth.md": "# Authentication\n\nSend a header with each call to the gateway.\n",
    "docs/tokens.md": "# Tokens\n\nA bearer token for the API is issued per API client; "
                      "rotate the API token monthly.\n",
}


def build(tmp_path: Path) -> tuple[LayerSet, KcpPlan]:
    root = write_tree(tmp_path / "repo", DOCS)
    store = tmp_path / "store"
    store.mkdir()
    plan = compile_project(root, store / "AGENTS.db", EMB, extra=["docs/tokens.md"])
    return LayerSet.from_directory(store), plan
