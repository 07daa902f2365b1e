"""The access-token check (sediment.auth.oidc) against a real OpenID provider's keys: what
it accepts, and each reason it refuses, with the words the caller sees."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import OctKey

from sediment.auth import Principal
from sediment.auth.oidc import (
    Accepted,
    IdentityProviderError,
    JwtVerifier,
    OidcSettings,
    Refused,
    looks_like_jwt,
    parse_scope_map,
)
from sediment.errors import ConfigError
from tests.auth.oidc import Provider, signing_key
from tests.conftest import Runner

RESOURCE = "http://127.0.0.1:8765/mcp"


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    p = Provider(tmp_path_factory.mktemp("oidc"))
    yield p
    p.stop()


def settings(provider: Provider, **extra: object) -> OidcSettings:
    return OidcSettings(issuer=provider.issuer, resource=RESOURCE,
                        actor_claim="preferred_username", **extra)  # type: ignore[arg-type]


def check(verifier: JwtVerifier, token: str) -> Accepted | Refused:
    return anyio.run(verifier.verify, token)


def refused(verifier: JwtVerifier, token: str) -> str:
    out = check(verifier, token)
    assert isinstance(out, Refused), out
    assert (out.status, out.error) == (401, "invalid_token")
    return out.description


def test_a_token_for_this_server_is_its_client_with_the_highest_role(
        provider: Provider) -> None:
    out = check(JwtVerifier(settings(provider)), provider.token("agent", RESOURCE))
    assert isinstance(out, Accepted)
    assert out.principal == Principal("agent-bot", "writer")
    assert out.scopes == {"sediment:reader", "sediment:writer"}


def test_a_token_for_another_resource_is_refused(provider: Provider) -> None:
    token = provider.token("agent", "http://127.0.0.1:8765/other")
    assert refused(JwtVerifier(settings(provider)), token) == \
        "the token was not issued for this server (audience)"


def test_expired_not_yet_valid_and_foreign_tokens_are_refused(provider: Provider) -> None:
    verifier = JwtVerifier(settings(provider))
    real = provider.token("agent", RESOURCE)
    now = int(time.time())
    assert isinstance(check(verifier, provider.resign(real)), Accepted)
    assert refused(verifier, provider.resign(real, iat=now - 7200, exp=now - 3600)) == \
        "the token has expired"
    assert refused(verifier, provider.resign(real, nbf=now + 3600)) == \
        "the token is not valid yet"
    assert refused(verifier, provider.resign(real, iss="http://127.0.0.1:1")) == \
        "the token is from another issuer"
    assert "not accepted" in refused(verifier, provider.resign(real, exp=None))


def test_forged_tokens_are_refused(provider: Provider) -> None:
    verifier = JwtVerifier(settings(provider))
    real = provider.token("agent", RESOURCE)
    head, body, _sig = real.split(".")
    other = signing_key(provider.key.kid or "k1")
    assert refused(verifier, provider.resign(real, key=other)) == \
        "the token's signature does not verify"
    assert refused(verifier, f"{head}.{body}.AAAA") == "the token's signature does not verify"
    secret = OctKey.generate_key(256)
    hs = jwt.encode({"alg": "HS256", "kid": provider.key.kid}, jwt.decode(real, provider.key)
                    .claims, secret)
    assert refused(verifier, hs) == "the token's algorithm 'HS256' is not accepted"
    unknown = signing_key("nobody")
    assert refused(verifier, provider.resign(real, key=unknown)) == \
        "the token is signed with a key the issuer does not publish"
    assert refused(verifier, "eyJ.not.a-jwt") == "the token is not a signed JWT"


def test_an_actor_claim_that_is_no_actor_name_is_refused(provider: Provider) -> None:
    verifier = JwtVerifier(settings(provider))
    token = provider.resign(provider.token("agent", RESOURCE),
                            preferred_username="agent@example.com")
    assert refused(verifier, token).startswith(
        "claim 'preferred_username' does not name an actor: actor 'agent@example.com' is "
        "invalid")


def test_scopes_map_to_roles_and_none_mapped_is_insufficient_scope(
        provider: Provider) -> None:
    real = provider.token("agent", RESOURCE)
    mapped = JwtVerifier(settings(provider, scopes={"sediment:writer": "reviewer"}))
    out = check(mapped, real)
    assert isinstance(out, Accepted) and out.principal.role == "reviewer"
    entra = JwtVerifier(settings(provider, scope_claims=("roles",)))
    out = check(entra, provider.resign(real, scope=None, roles=["sediment:admin"]))
    assert isinstance(out, Accepted) and out.principal.role == "admin"
    out = check(JwtVerifier(settings(provider)), provider.resign(real, scope="openid"))
    assert out == Refused(403, "insufficient_scope", "the token carries none of the scopes "
                          "this server maps to a role (ask for sediment:reader)",
                          "sediment:reader")


def test_rotated_keys_are_fetched_and_withdrawn_ones_refused(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    p = Provider(tmp_path_factory.mktemp("rotate"))
    try:
        verifier = JwtVerifier(settings(p))
        old = p.token("agent", RESOURCE)
        assert isinstance(check(verifier, old), Accepted)
        p.rotate("k2")
        new = p.token("agent", RESOURCE)
        assert isinstance(check(verifier, new), Accepted)
        assert refused(verifier, old) == \
            "the token is signed with a key the issuer does not publish"
    finally:
        p.stop()


def test_unknown_key_ids_refetch_at_most_the_limit(provider: Provider) -> None:
    fetched: list[str] = []
    verifier = JwtVerifier(settings(provider), refetches=2)
    real = provider.token("agent", RESOURCE)
    original = verifier._get

    async def counting(url: str) -> dict[str, object]:
        fetched.append(url)
        return await original(url)

    verifier._get = counting  # type: ignore[method-assign]
    for n in range(5):
        forged = provider.resign(real, key=signing_key(f"forged-{n}"))
        refused(verifier, forged)
    jwks = [u for u in fetched if u.endswith("/jwks")]
    assert len(jwks) == 3  # the first fetch, then two refetches within the minute


def test_a_provider_that_cannot_be_reached_is_an_outage_not_a_refusal() -> None:
    dead = OidcSettings(issuer="http://127.0.0.1:9", resource=RESOURCE)
    with pytest.raises(IdentityProviderError, match=r"identity provider http://127\.0\.0\.1:9/"
                       r"\.well-known/openid-configuration: cannot fetch it"):
        check(JwtVerifier(dead, timeout=5), "eyJhbGciOiJSUzI1NiJ9.e30.c2ln")


def test_discovery_must_name_the_configured_issuer(provider: Provider) -> None:
    slash = OidcSettings(issuer=provider.issuer + "/", resource=RESOURCE)
    with pytest.raises(IdentityProviderError, match="names issuer"):
        check(JwtVerifier(slash), provider.token("agent", RESOURCE))
    assert httpx.get(provider.issuer + "/.well-known/openid-configuration").status_code == 200


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"issuer": "http://idp.example.com"}, "--oidc-issuer 'http://idp.example.com' must be "
                                            "an https:// URL"),
    ({"resource": "https://x.example.com/mcp#f"}, "without a query or fragment"),
    ({"scopes": {"a": "owner"}}, "--oidc-scope a=owner: role 'owner' is unknown"),
    ({"scopes": {}}, "map at least one scope"),
    ({"actor_claim": ""}, "must name a claim"),
])
def test_settings_name_what_is_wrong(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"issuer": "https://idp.example.com/realms/team",
                               "resource": "https://sediment.example.com/mcp"}
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        OidcSettings(**{**base, **kwargs})  # type: ignore[arg-type]


def test_scope_maps_and_token_shapes() -> None:
    assert parse_scope_map(()) == {"sediment:reader": "reader", "sediment:writer": "writer",
                                   "sediment:reviewer": "reviewer", "sediment:admin": "admin"}
    assert parse_scope_map(("api.read=reader", "api.write = writer")) == \
        {"api.read": "reader", "api.write": "writer"}
    with pytest.raises(ConfigError, match="write SCOPE=ROLE"):
        parse_scope_map(("api.read",))
    s = OidcSettings(issuer="https://idp.example.com", resource="https://s.example.com/mcp",
                     scopes={"r": "reader", "w": "writer", "a": "admin"})
    assert s.audience == ("https://s.example.com/mcp",)
    from sediment.auth.roles import Permission
    assert [s.scope_for(p) for p in Permission] == ["r", "w", "a", "a"]
    assert looks_like_jwt("eyJh.eyJi.sig") and not looks_like_jwt("sdm_0123abcd_secret")


@pytest.mark.parametrize(("args", "message"), [
    (["--oidc-resource", "https://s.example.com/mcp"],
     "--oidc-resource needs --oidc-issuer"),
    (["--oidc-issuer", "https://idp.example.com", "--host", "0.0.0.0"],
     "--oidc-issuer off loopback needs --oidc-resource"),
])
def test_serve_names_a_bad_oidc_option(sediment: Runner, tmp_path: Path, args: list[str],
                                       message: str) -> None:
    r = sediment("serve", "--transport", "http", "--port", "0", "--dir", str(tmp_path),
                 *args)
    assert r.code != 0
    assert message in r.err, r.err
    assert "Traceback" not in r.err


def test_the_app_behind_never_sees_the_token_and_a_write_needs_its_scope(
        provider: Provider, tmp_path: Path) -> None:
    from starlette.types import Receive, Scope, Send

    from sediment.auth import TokenStore
    from sediment.auth.tokens import FailClosed
    from sediment.server.oauth import ResourceServer
    from sediment.server.principals import PRINCIPAL_KEY, ActorAuth

    seen: list[Scope] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    auth = ActorAuth(app, FailClosed(TokenStore(tmp_path / "tokens.json")), actor="server",
                     oauth=ResourceServer(JwtVerifier(settings(provider)), "/mcp"))
    reader = provider.token("reader", RESOURCE)

    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=auth)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            h = {"Authorization": f"Bearer {reader}"}
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "agents_search", "arguments": {"query": "x"}}}
            write = {**call, "params": {"name": "save_memory", "arguments": {}}}
            return [await c.post("/mcp", json=call, headers=h),
                    await c.post("/mcp", json=[call, write], headers=h),
                    await c.post("/tools/agents_context_write", json={}, headers=h)]

    read, batch, api = anyio.run(main)
    assert read.status_code == 200
    assert [s[PRINCIPAL_KEY] for s in seen] == [Principal("rita-bot", "reader")]
    assert all(k.lower() != b"authorization" for k, _ in seen[0]["headers"])
    for refused_call in (batch, api):
        assert refused_call.status_code == 403
        assert 'error="insufficient_scope"' in refused_call.headers["www-authenticate"]
        assert 'scope="sediment:writer"' in refused_call.headers["www-authenticate"]
