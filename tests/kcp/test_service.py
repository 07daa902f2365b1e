"""The functions the MCP server exposes, and KCP's query vocabulary over manifests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sediment.errors import NotFoundError, ValidationError
from sediment.kcp import KnowledgeService, load_catalog, project_slug, query_units, score_unit
from sediment.ops.requests import KnowledgeRequest, parse
from sediment.ops.service import ContextService
from tests.kcp.helpers import manifest, unit, write_tree
from tests.kcp.project import EMB, build


class Hybrid:
    """``search_knowledge`` as the MCP server runs it: hybrid, through the service."""

    def __init__(self, service: ContextService) -> None:
        self.service = service

    def search_knowledge(self, query: str, **kw: Any) -> list[dict[str, Any]]:
        request = parse(KnowledgeRequest, {"query": query, **kw})
        units: list[dict[str, Any]] = self.service.search_knowledge(request, None)["units"]
        return units

    def __getattr__(self, name: str) -> Any:
        return getattr(self.service.knowledge, name)


def service(tmp_path: Path, *, hybrid: bool = True) -> Any:
    ls, plan = build(tmp_path)
    if hybrid:
        return Hybrid(ContextService(ls, EMB, root=plan.root))
    return KnowledgeService(plan.root, ls)


def test_resources_are_the_manifest_and_its_units(tmp_path: Path) -> None:
    svc = service(tmp_path)
    resources = {r.uri: r for r in svc.list_resources()}
    assert "knowledge://acme-platform" in resources
    unit_res = resources["knowledge://acme-platform/deploy-v3"]
    assert unit_res.description == "How do I ship version 3 to production?"
    assert unit_res.mime_type == "text/markdown"
    assert len(resources) == 6
    text = svc.read_resource("knowledge://acme-platform/deploy-v3")
    assert text.text.startswith("# Deploy\n") and text.mime_type == "text/markdown"
    whole = svc.read_resource("knowledge://acme-platform")
    assert whole.mime_type == "application/yaml" and "deploy-v3" in whole.text


@pytest.mark.parametrize(("uri", "error"), [
    ("knowledge://acme-platform/ghost", NotFoundError),
    ("knowledge://nobody/overview", NotFoundError),
    ("https://acme-platform/overview", ValidationError),
    ("knowledge:///overview", ValidationError),
    ("knowledge://[acme/overview", ValidationError),
    ("knowledge://acme]/overview", ValidationError),
])
def test_bad_resource_uris(tmp_path: Path, uri: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        service(tmp_path).read_resource(uri)


def test_search_knowledge_returns_units_with_prerequisites(tmp_path: Path) -> None:
    svc = service(tmp_path)
    results = svc.search_knowledge("rollout to production", k=3)
    top = results[0]
    assert top["uri"] == "knowledge://acme-platform/deploy-v3"
    assert top["boosts"]["kcp.trigger"] > 0
    assert top["load_first"] == ["knowledge://acme-platform/overview",
                                 "knowledge://acme-platform/cluster"]
    assert len({r["uri"] for r in results}) == len(results) <= 3
    assert all(r["unit_id"] != "deploy-v2" for r in results)


def test_search_knowledge_filters(tmp_path: Path) -> None:
    svc = service(tmp_path)
    with_old = svc.search_knowledge("deploy production version", exclude_superseded=False)
    assert "deploy-v2" in [r["unit_id"] for r in with_old]
    ops = svc.search_knowledge("deploy production cluster", audience="operator")
    assert {r["unit_id"] for r in ops} <= {"cluster", "deploy-v3"}  # devops == operator
    assert "deploy-v3" in {r["unit_id"] for r in ops}
    mods = svc.search_knowledge("authenticate requests", scope="module")
    assert [r["unit_id"] for r in mods] == ["auth"]


def test_search_knowledge_lexical_without_an_embedder(tmp_path: Path) -> None:
    svc = service(tmp_path, hybrid=False)
    assert svc.search_knowledge("kubernetes cluster")[0]["unit_id"] == "cluster"


@pytest.mark.parametrize("kwargs", [{"query": " "}, {"query": "x", "k": 0},
                                    {"query": "x", "scope": "galaxy"}])
def test_search_knowledge_validates_its_input(tmp_path: Path, kwargs: dict[str, object]
                                              ) -> None:
    with pytest.raises(ValidationError):
        service(tmp_path / "hybrid").search_knowledge(**kwargs)
    with pytest.raises(ValidationError):
        service(tmp_path / "lexical", hybrid=False).search_knowledge(**kwargs)


def test_project_slugs_are_unique(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {"knowledge.yaml": manifest(project="Payments Service"),
                                 "b/knowledge.yaml": manifest(project="payments service")})
    assert [e.slug for e in load_catalog(root).entries] == ["payments-service",
                                                            "payments-service-2"]
    assert project_slug("wiki.example.org") == "wiki.example.org"
    assert project_slug("///") == "project"


def test_query_scores_follow_the_spec(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {"knowledge.yaml": manifest(
        unit("deploy-overview", path="docs/deploy-overview.md",
             intent="What is the release process?", triggers=["deploy", "release"]),
        unit("deploy-to-prod", path="runbooks/prod.md",
             intent="How do I deploy the service to production?", triggers=["deploy"],
             requires_capabilities=["tool:kubectl"]),
        unit("old", intent="How did deploys work?", deprecated=True),
        unit("ops", intent="Who is on call?", audience=["devops"], scope="project"))})
    entries = load_catalog(root).entries
    got = [(m.unit.id, m.score, m.reasons) for m in query_units(entries, ["deploy"])]
    assert got == [("deploy-to-prod", 9, ("trigger", "intent", "id")),
                   ("deploy-overview", 6, ("trigger", "id"))]
    assert [m.unit.id for m in query_units(entries, ["deploy"], exclude_deprecated=False)
            ][-1] == "old"
    assert [m.unit.id for m in query_units(entries, [], audience="operator")] == ["ops"]
    assert [m.unit.id for m in query_units(entries, [], scope="project")] == ["ops"]
    assert len(query_units(entries, [], limit=2)) == 2
    u = entries[0].manifest.units[0]
    assert score_unit(u, ["RELEASE", "overview"]) == (9, ("trigger", "intent", "id"))


def test_search_knowledge_reads_as_its_caller(tmp_path: Path) -> None:
    """``search_knowledge`` over MCP searches as its caller, as every read does: another
    actor's local notes are hidden, so 80 of alice's notes on the query no longer take
    the hits the units are read from (bob got one unit of three; it searched as the
    machine's owner, who reads every local note)."""
    import anyio

    from mcp import Client
    from sediment.ops.requests import WriteRequest
    from sediment.ops.write import write_context
    from sediment.server import build_server
    from sediment.workspace import Workspace
    from tests.conftest import env_places

    ls, plan = build(tmp_path)
    for i in range(80):
        write_context(ls, EMB, parse(WriteRequest, {
            "content": f"rollout to production rollout production note {i}", "kind": "note",
            "confidence": 0.5, "scope": "local"}), actor="alice")
    ws = Workspace.over_files(ls, EMB, env_places("bob"), root=plan.root)

    async def main() -> Any:
        async with Client(build_server(ws)) as client:
            got = await client.call_tool("search_knowledge",
                                         {"query": "rollout to production", "k": 3})
            assert not got.is_error, got.content
            return got.structured_content

    try:
        units = [u["uri"] for u in anyio.run(main)["units"]]
    finally:
        ws.close()
    assert units == ["knowledge://acme-platform/deploy-v3", "knowledge://acme-platform/auth",
                     "knowledge://acme-platform/overview"], units
