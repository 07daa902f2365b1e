"""A plain HTTP API beside streamable MCP, on the same server (docs/http-api.md).

``GET /health``, ``GET /tools/list`` (``?agent=NAME`` filters), ``POST /tools/{name}``,
``GET /agents/list``, ``POST /agents/{name}/prompt`` and ``GET /openapi.json``. Tool calls
go through the MCP server's own tools, so arguments meet the same strict request models and
reach the same services. The bearer token (``ActorAuth`` wraps the whole app) and, on
loopback binds, the same Host and Origin rules as the MCP endpoint apply. Every error is
``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pydantic
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, TextContent
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sediment import __version__
from sediment.agents import Registry
from sediment.auth.roles import ROUTES, refusal
from sediment.errors import (
    NotFoundError,
    SedimentError,
)
from sediment.ops.requests import describe_errors
from sediment.server.disclosure import public_message
from sediment.server.hosts import HostPolicy, policy_for
from sediment.server.http import is_loopback
from sediment.server.openapi import openapi_document
from sediment.server.principals import CALLER, request_principal
from sediment.server.prompts import ServiceContext, resolve_off_loop
from sediment.server.tools import LEGACY_TOOL_NAMES

__all__ = ["MAX_BODY", "MAX_DEPTH", "mount_api", "nesting"]

MAX_BODY = 1024 * 1024
MAX_DEPTH = 64
"""How deep a body may nest arrays and objects: deeper is refused with 400 before anything
walks it (Python's parser stops near 1,000 with a RecursionError, a 500 before)."""
Endpoint = Callable[[Request], Awaitable[Response]]


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def nesting(value: object) -> int:
    """How deep ``value`` nests lists and dicts (0 for a scalar), without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                break
            stack.extend((v, depth) for v in (item.values() if isinstance(item, dict)
                                              else item))
    return deepest


def _classify(exc: BaseException) -> ApiError:
    """The most specific SedimentError in ``exc``'s cause chain, as a status and code (a
    tool that validates with the SDK's own models fails with a pydantic error: 400 too)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, SedimentError):
            return ApiError(seen.http_status, seen.error_code, public_message(seen))
        if isinstance(seen, pydantic.ValidationError):
            return ApiError(400, "bad_request", describe_errors(seen))
        seen = seen.__cause__
    if isinstance(exc, ToolError) and not isinstance(exc, UnexpectedToolError):
        return ApiError(400, "bad_request", str(exc))
    return ApiError(500, "internal_error", "the server failed; see its log")


class Api:
    def __init__(self, server: MCPServer, registry: Registry, context: ServiceContext,
                 hosts: HostPolicy, actor: str) -> None:
        self.server = server
        self.registry = registry
        self.context = context
        self.hosts = hosts
        self.actor = actor
        """The server's own actor: whom a request without a bearer token acts as."""

    def _check_headers(self, request: Request) -> None:
        """The rule :class:`~sediment.server.hosts.HostGuard` applies before any endpoint,
        checked again here for an API mounted on another app."""
        if not self.hosts.host_ok(request.headers.get("host")):
            raise ApiError(421, "misdirected", "the Host header names no loopback address")
        if not self.hosts.origin_ok(request.headers.get("origin")):
            raise ApiError(403, "forbidden", "requests from this Origin are refused")

    async def _body(self, request: Request) -> dict[str, Any]:
        ctype = request.headers.get("content-type", "")
        if ctype.split(";")[0].strip().lower() != "application/json":
            raise ApiError(415, "unsupported_media_type",
                           "send the body as JSON with Content-Type: application/json")
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
            raise ApiError(413, "too_large", f"the body is larger than {MAX_BODY} bytes")
        raw = bytearray()
        async for piece in request.stream():
            raw.extend(piece)
            if len(raw) > MAX_BODY:
                raise ApiError(413, "too_large", f"the body is larger than {MAX_BODY} bytes")
        try:
            data = json.loads(raw or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ApiError(400, "bad_request", f"the body is not valid JSON: {exc}") from None
        except RecursionError:
            data, too_deep = None, True
        else:
            too_deep = nesting(data) > MAX_DEPTH
        if too_deep:
            raise ApiError(400, "bad_request", f"the body nests arrays and objects more than "
                                               f"{MAX_DEPTH} deep")
        if not isinstance(data, dict):
            raise ApiError(400, "bad_request", "the body must be a JSON object")
        return data

    def route(self, key: str, fn: Callable[[Request], Awaitable[Any]],
              query: frozenset[str] = frozenset()) -> Endpoint:
        """``fn`` behind the Host/Origin checks and the permission ``ROUTES[key]`` needs
        (a request without a principal reached a server that has no tokens); a query
        parameter outside ``query`` is refused, as an unknown body field is."""
        permission = ROUTES[key]

        async def endpoint(request: Request) -> Response:
            try:
                self._check_headers(request)
                unknown = sorted(set(request.query_params) - query)
                if unknown:
                    takes = ", ".join(sorted(query)) or "none"
                    raise ApiError(400, "bad_request",
                                   f"unknown query parameter {unknown[0][:64]!r} "
                                   f"({key} takes: {takes})")
                who = request_principal(request)
                if who is not None and not who.may(permission):
                    raise ApiError(403, "forbidden",
                                   refusal(who.actor, who.role, permission, key))
                token = CALLER.set(who)
                try:
                    return JSONResponse(await fn(request))
                finally:
                    CALLER.reset(token)
            except ApiError as exc:
                return JSONResponse({"error": {"code": exc.code, "message": exc.message}},
                                    status_code=exc.status)
        return endpoint

    async def tool_names(self, agent: str | None) -> list[dict[str, Any]]:
        tools = await self.server.list_tools()
        if agent is not None:
            try:
                keep = set(self.registry.find(agent).info.tools)
            except NotFoundError as exc:
                raise ApiError(404, "not_found", str(exc)) from None
            tools = [t for t in tools if t.name in keep]
        return [{"name": t.name, "description": t.description or "",
                 "input_schema": t.input_schema,
                 **({"output_schema": t.output_schema} if t.output_schema else {})}
                for t in tools]

    async def health(self, request: Request) -> Any:
        return {"status": "ok", "version": __version__}

    async def tools_list(self, request: Request) -> Any:
        return {"tools": await self.tool_names(request.query_params.get("agent"))}

    async def call_tool(self, request: Request) -> Any:
        name = request.path_params["name"]
        name = LEGACY_TOOL_NAMES.get(name, name)
        if name not in {t.name for t in await self.server.list_tools()}:
            raise ApiError(404, "not_found", f"no tool {name[:64]!r}; GET /tools/list")
        arguments = await self._body(request)
        try:
            out = await self.server.call_tool(name, arguments)
        except Exception as exc:
            raise _classify(exc) from None
        if not isinstance(out, CallToolResult):
            raise ApiError(500, "internal_error", "the tool asked for input over MCP")
        text = "\n".join(c.text for c in out.content if isinstance(c, TextContent))
        if out.is_error:
            raise ApiError(400, "bad_request", text)
        return {"result": out.structured_content if out.structured_content is not None
                else {"text": text}}

    async def agents_list(self, request: Request) -> Any:
        return {"agents": [info.to_dict() for info in self.registry.list()]}

    async def agent_prompt(self, request: Request) -> Any:
        name = request.path_params["name"]
        try:
            self.registry.find(name)
        except NotFoundError as exc:
            raise ApiError(404, "not_found", str(exc)) from None
        body = await self._body(request)
        if set(body) - {"arguments"}:
            raise ApiError(400, "bad_request", 'the body is {"arguments": {...}} and nothing '
                                               "else")
        arguments = body.get("arguments", {})
        if not isinstance(arguments, dict):
            raise ApiError(400, "bad_request", "arguments must be an object of strings")
        who = request_principal(request)
        reader = self.context.as_actor(who.actor if who is not None else self.actor)
        try:
            resolved = await resolve_off_loop(
                lambda: self.registry.resolve(name, arguments, reader))
        except SedimentError as exc:
            raise _classify(exc) from None
        return {"result": resolved.to_dict()}

    async def openapi(self, request: Request) -> Any:
        tools = await self.server.list_tools()
        return openapi_document([(t.name, t.description or "", t.input_schema, t.output_schema)
                                 for t in tools], self.registry.list())


def mount_api(server: MCPServer, registry: Registry, context: ServiceContext, *,
              host: str, actor: str) -> None:
    """Add the API's routes to ``server`` (before its HTTP app is built); ``actor`` is
    the server's own (the workspace's)."""
    api = Api(server, registry, context, policy_for(host, is_loopback(host)), actor)
    for path, method, fn in (
            ("/health", "GET", api.health),
            ("/tools/list", "GET", api.tools_list),
            ("/tools/{name}", "POST", api.call_tool),
            ("/agents/list", "GET", api.agents_list),
            ("/agents/{name}/prompt", "POST", api.agent_prompt),
            ("/openapi.json", "GET", api.openapi)):
        query = frozenset({"agent"}) if path == "/tools/list" else frozenset()
        server.custom_route(path, methods=[method])(api.route(f"{method} {path}", fn, query))
