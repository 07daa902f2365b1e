"""The HTTP API's OpenAPI 3.1 document, built from the tools and personas actually served.

Each tool gets its own path with its input schema as the request body; pydantic's local
``$defs`` are moved to ``components/schemas`` (a ``#/$defs/...`` reference would otherwise
point at the document's root).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from sediment import __version__
from sediment.agents import PersonaInfo

__all__ = ["openapi_document"]

_ERROR = {"type": "object", "required": ["error"], "properties": {"error": {
    "type": "object", "required": ["code", "message"],
    "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}
_ARGUMENT = {"type": "object", "required": ["name", "description", "required"], "properties": {
    "name": {"type": "string"}, "description": {"type": "string"},
    "required": {"type": "boolean"}}}
_AGENT = {"type": "object", "required": ["name", "description", "tools", "source", "arguments"],
          "properties": {"name": {"type": "string"}, "description": {"type": "string"},
                         "tools": {"type": "array", "items": {"type": "string"}},
                         "source": {"enum": ["toml", "lua", "python"]},
                         "arguments": {"type": "array",
                                       "items": {"$ref": "#/components/schemas/Argument"}}}}
_PROMPT = {"type": "object", "required": ["result"], "properties": {"result": {
    "type": "object", "required": ["system", "tools", "messages"], "properties": {
        "system": {"type": "string"}, "tools": {"type": "array", "items": {"type": "string"}},
        "messages": {"type": "array", "items": {
            "type": "object", "required": ["role", "content"],
            "properties": {"role": {"enum": ["user", "assistant", "system"]},
                           "content": {"type": "string"}}}}}}}}
_TOOLS = {"type": "object", "required": ["tools"], "properties": {"tools": {
    "type": "array", "items": {"type": "object", "required": ["name", "description",
                                                               "input_schema"],
                               "properties": {"name": {"type": "string"},
                                              "description": {"type": "string"},
                                              "input_schema": {"type": "object"}}}}}}
ERRORS = {
    "400": "bad_request: the arguments break a rule (the message names it)",
    "401": "unauthorized: missing or wrong bearer token",
    "403": "forbidden: refused Origin, or a write the trust model forbids",
    "404": "not_found: no such tool or persona (or chunk)",
    "408": "timeout: the persona's script ran past its time limit",
    "413": "too_large: the body is larger than 1 MiB",
    "415": "unsupported_media_type: the body is not application/json",
    "421": "misdirected: the Host header names no loopback address",
    "500": "agent_error: the persona failed (or internal_error)",
}


def _json(schema: Any) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _errors(*codes: str) -> dict[str, Any]:
    return {c: {"description": ERRORS[c], **_json({"$ref": "#/components/schemas/Error"})}
            for c in ("400", "401", *codes)}


def _hoist(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    schema = copy.deepcopy(schema)
    for name, sub in schema.pop("$defs", {}).items():
        components[name] = sub

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (v.replace("#/$defs/", "#/components/schemas/")
                        if k == "$ref" and isinstance(v, str) else walk(v))
                    for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    for name in list(components):
        components[name] = walk(components[name])
    return walk(schema)  # type: ignore[no-any-return]


def openapi_document(tools: Iterable[tuple[str, str, dict[str, Any]]],
                     personas: Iterable[PersonaInfo]) -> dict[str, Any]:
    components: dict[str, Any] = {"Error": _ERROR, "Argument": _ARGUMENT, "Agent": _AGENT}
    paths: dict[str, Any] = {
        "/health": {"get": {"operationId": "health", "responses": {
            "200": {"description": "The server is up", **_json({
                "type": "object", "required": ["status", "version"],
                "properties": {"status": {"const": "ok"}, "version": {"type": "string"}}})},
            **_errors()}}},
        "/tools/list": {"get": {
            "operationId": "tools_list",
            "parameters": [{"name": "agent", "in": "query", "required": False,
                            "schema": {"type": "string"},
                            "description": "Only the tools of this persona"}],
            "responses": {"200": {"description": "The tools served", **_json(_TOOLS)},
                          **_errors("404")}}},
        "/agents/list": {"get": {"operationId": "agents_list", "responses": {
            "200": {"description": "The personas", **_json({
                "type": "object", "required": ["agents"], "properties": {"agents": {
                    "type": "array", "items": {"$ref": "#/components/schemas/Agent"}}}})},
            **_errors()}}},
    }
    for name, description, schema in tools:
        paths[f"/tools/{name}"] = {"post": {
            "operationId": f"tool_{name}", "summary": description[:120],
            "requestBody": {"required": True, **_json(_hoist(schema, components))},
            "responses": {"200": {"description": "The tool's result", **_json({
                "type": "object", "required": ["result"],
                "properties": {"result": {"type": "object"}}})},
                **_errors("400", "403", "404", "413", "415")}}}
    for info in personas:
        args = {a.name: {"type": "string", "description": a.description}
                for a in info.arguments}
        paths[f"/agents/{info.name}/prompt"] = {"post": {
            "operationId": f"agent_{info.name}", "summary": info.description[:120],
            "requestBody": {"required": True, **_json({
                "type": "object", "additionalProperties": False, "properties": {"arguments": {
                    "type": "object", "additionalProperties": False, "properties": args,
                    "required": [a.name for a in info.arguments if a.required]}}})},
            "responses": {"200": {"description": "The resolved persona", **_json(_PROMPT)},
                          **_errors("400", "404", "408", "413", "415", "500")}}}
    return {"openapi": "3.1.0",
            "info": {"title": "Sediment HTTP API", "version": __version__},
            "components": {"schemas": components,
                           "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
            "security": [{"bearer": []}], "paths": paths}
