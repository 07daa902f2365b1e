"""Access tokens from the team's identity provider (OAuth 2.1 resource server, MCP
authorization): a JWT signed by the issuer, for this server, mapped to an actor and a role.

The issuer's OpenID discovery document names its JWKS; keys are fetched on the first token
and kept for ``max_age`` seconds (so a key the provider withdrew stops working), and fetched
again when a token names a key id the cache lacks (the provider rotated its keys), at most
``refetches`` times a minute so a stream of forged key ids cannot turn the server into a
request amplifier. A token is accepted only when its
signature verifies with an asymmetric algorithm, ``iss`` is the issuer exactly, ``aud``
names this server (RFC 8707: the resource the client asked a token for), ``exp`` has not
passed and ``nbf`` has (``leeway`` seconds of clock skew either way). The actor is one
claim's value; the role is the highest one that the token's scopes map to.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import httpx

from sediment.auth.roles import ROLES, Permission, allowed
from sediment.auth.tokens import Principal, check_grant
from sediment.errors import ConfigError, SedimentError, ValidationError

if TYPE_CHECKING:
    from joserfc.jwk import KeySet

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
              "ES512", "EdDSA")
"""Signature algorithms accepted: asymmetric only (``none`` and shared-secret HMAC never)."""
DEFAULT_SCOPES: Mapping[str, str] = {f"sediment:{role}": role for role in ROLES}
DEFAULT_SCOPE_CLAIMS = ("scope", "scp")
"""Where scopes are read from: ``scope`` (RFC 9068, Keycloak, Okta, Auth0) and ``scp``
(Entra ID, a string or a list)."""


class IdentityProviderError(SedimentError):
    """The identity provider cannot be reached or answered nonsense: no token can be
    checked (the server answers 503, not 401, so clients do not start a new sign-in)."""


def _url(name: str, value: str) -> str:
    parts = urlsplit(value)
    local = parts.hostname in {"localhost", "127.0.0.1", "::1"}
    if parts.scheme != "https" and not (parts.scheme == "http" and local):
        raise ConfigError(f"{name} {value!r} must be an https:// URL (http:// only on "
                          "localhost)")
    if not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(f"{name} {value!r} must be an absolute URL without a query or "
                          "fragment")
    return value


@dataclass(frozen=True, slots=True)
class OidcSettings:
    """What the server trusts: ``issuer`` (exactly as in its tokens' ``iss``), ``resource``
    (this server's MCP endpoint URL as clients reach it: the RFC 9728 resource and the
    RFC 8707 resource indicator), the ``audience`` values it accepts (default: the
    resource), the claim naming the actor, and which scope grants which role."""

    issuer: str
    resource: str
    audience: tuple[str, ...] = ()
    actor_claim: str = "sub"
    scopes: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_SCOPES))
    scope_claims: tuple[str, ...] = DEFAULT_SCOPE_CLAIMS
    leeway: int = 30

    def __post_init__(self) -> None:
        _url("--oidc-issuer", self.issuer)
        _url("--oidc-resource", self.resource)
        if not self.audience:
            object.__setattr__(self, "audience", (self.resource,))
        if not self.actor_claim:
            raise ConfigError("--oidc-actor-claim must name a claim")
        if not self.scopes:
            raise ConfigError("--oidc-scope: map at least one scope to a role")
        for scope, role in self.scopes.items():
            if not scope or " " in scope:
                raise ConfigError(f"--oidc-scope {scope!r}: a scope is one word")
            if role not in ROLES:
                raise ConfigError(f"--oidc-scope {scope}={role}: role {role!r} is unknown; "
                                  f"use one of {', '.join(ROLES)}")
        if self.leeway < 0:
            raise ConfigError("the clock leeway must not be negative")

    def scope_for(self, permission: Permission) -> str:
        """The scope to ask for to gain ``permission``: the one mapped to the least role
        holding it (what an ``insufficient_scope`` challenge names)."""
        for role in ROLES:
            if allowed(role, permission):
                for scope, mapped in self.scopes.items():
                    if mapped == role:
                        return scope
        return ""


def parse_scope_map(pairs: tuple[str, ...]) -> dict[str, str]:
    """``SCOPE=ROLE`` pairs (``--oidc-scope``) as a mapping; none given: the defaults."""
    if not pairs:
        return dict(DEFAULT_SCOPES)
    out: dict[str, str] = {}
    for pair in pairs:
        scope, sep, role = pair.partition("=")
        if not sep or not scope.strip() or not role.strip():
            raise ConfigError(f"--oidc-scope {pair!r}: write SCOPE=ROLE, e.g. "
                              "sediment:writer=writer")
        out[scope.strip()] = role.strip()
    return out


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a token is not accepted: ``status`` 401 (``invalid_token``) or 403
    (``insufficient_scope``, with the ``scope`` that would do)."""

    status: int
    error: str
    description: str
    scope: str = ""


@dataclass(frozen=True, slots=True)
class Accepted:
    principal: Principal
    scopes: frozenset[str]


def looks_like_jwt(token: str) -> bool:
    """Three dot-separated base64url parts: what is sent to the issuer's keys (a Sediment
    token, ``sdm_...``, never is)."""
    parts = token.split(".")
    return len(parts) == 3 and all(parts[:2]) and token.startswith("ey")


def _scopes(claims: Mapping[str, Any], names: tuple[str, ...]) -> frozenset[str]:
    out: set[str] = set()
    for name in names:
        value = claims.get(name)
        if isinstance(value, str):
            out.update(value.split())
        elif isinstance(value, list):
            out.update(v for v in value if isinstance(v, str))
    return frozenset(out)


class JwtVerifier:
    """Checks access tokens against the issuer's published keys (see the module text)."""

    def __init__(self, settings: OidcSettings, *, refetches: int = 10,
                 max_age: float = 3600.0, timeout: float = 10.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.refetches = refetches
        self.max_age = max_age
        self.timeout = timeout
        self.clock = clock
        self._keys: KeySet | None = None
        self._discovery: dict[str, Any] | None = None
        self._fetched_at = float("-inf")
        self._recent: deque[float] = deque()
        self._lock = anyio.Lock()

    async def _get(self, url: str) -> dict[str, Any]:
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                response = await client.get(url, headers={"accept": "application/json"})
        except httpx.HTTPError as exc:
            raise IdentityProviderError(f"identity provider {url}: cannot fetch it "
                                        f"({exc.__class__.__name__}: {exc})") from None
        if response.status_code != 200:
            raise IdentityProviderError(f"identity provider {url}: HTTP "
                                        f"{response.status_code}")
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise IdentityProviderError(f"identity provider {url}: not a JSON object")
        return data

    async def _discover(self) -> dict[str, Any]:
        if self._discovery is None:
            issuer = self.settings.issuer
            url = issuer.rstrip("/") + "/.well-known/openid-configuration"
            doc = await self._get(url)
            if doc.get("issuer") != issuer:
                raise IdentityProviderError(
                    f"{url} names issuer {doc.get('issuer')!r}, not {issuer!r} (give "
                    "--oidc-issuer exactly as the provider spells it)")
            self._discovery = doc
        return self._discovery

    async def endpoint(self, name: str) -> str:
        """The URL the issuer's discovery document gives for ``name`` (``jwks_uri``,
        ``authorization_endpoint``, ``token_endpoint``)."""
        value = (await self._discover()).get(name)
        if not isinstance(value, str) or not value.startswith(("https://", "http://")):
            raise IdentityProviderError(f"the discovery document of {self.settings.issuer} "
                                        f"names no {name}")
        return value

    async def post_form(self, url: str, data: dict[str, str],
                        auth: tuple[str, str] | None = None) -> dict[str, Any]:
        """POST a form to the provider (the token endpoint) and read its JSON answer, an
        error answer included."""
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                response = await client.post(
                    url, data=data, headers={"accept": "application/json"},
                    auth=httpx.BasicAuth(*auth) if auth else httpx.USE_CLIENT_DEFAULT)
            answer = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise IdentityProviderError(f"identity provider {url}: no answer "
                                        f"({exc.__class__.__name__}: {exc})") from None
        if not isinstance(answer, dict):
            raise IdentityProviderError(f"identity provider {url}: not a JSON object")
        return answer

    async def _fetch_keys(self) -> KeySet:
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet

        uri = await self.endpoint("jwks_uri")
        data = await self._get(uri)
        try:
            keys = KeySet.import_key_set({"keys": [k for k in data.get("keys") or []
                                                   if isinstance(k, dict)
                                                   and k.get("use") in (None, "sig")]})
        except (JoseError, ValueError, TypeError) as exc:
            raise IdentityProviderError(f"{uri}: no usable signing keys ({exc})") from None
        self._keys = keys
        self._fetched_at = self.clock()
        return keys

    async def _key_for(self, kid: str | None) -> Any:
        """The issuer's key named ``kid``; fetched again (rate-limited) when unknown."""
        from joserfc.errors import InvalidKeyIdError

        async with self._lock:
            now = self.clock()
            keys = self._keys
            if keys is None or now - self._fetched_at > self.max_age:
                keys = await self._fetch_keys()
            try:
                return keys.get_by_kid(kid)
            except InvalidKeyIdError:
                while self._recent and now - self._recent[0] > 60:
                    self._recent.popleft()
                if len(self._recent) >= self.refetches:
                    return None
                self._recent.append(now)
            keys = await self._fetch_keys()
            try:
                return keys.get_by_kid(kid)
            except InvalidKeyIdError:
                return None

    async def verify(self, token: str) -> Accepted | Refused:
        """Check ``token``; raise :class:`IdentityProviderError` when the provider cannot
        be asked."""
        from joserfc import jwt
        from joserfc.errors import BadSignatureError, ClaimError, ExpiredTokenError, JoseError
        from joserfc.jws import extract_compact

        def invalid(why: str) -> Refused:
            return Refused(401, "invalid_token", why)

        s = self.settings
        try:
            header = extract_compact(token.encode("ascii")).headers()
        except (JoseError, ValueError, UnicodeError):
            return invalid("the token is not a signed JWT")
        if header.get("alg") not in ALGORITHMS:
            return invalid(f"the token's algorithm {str(header.get('alg'))[:20]!r} is not "
                           "accepted")
        kid = header.get("kid")
        key = await self._key_for(kid if isinstance(kid, str) else None)
        if key is None:
            return invalid("the token is signed with a key the issuer does not publish")
        try:
            claims = jwt.decode(token, key, algorithms=list(ALGORITHMS)).claims
        except BadSignatureError:
            return invalid("the token's signature does not verify")
        except JoseError as exc:
            return invalid(f"the token cannot be read ({exc.__class__.__name__})")
        registry = jwt.JWTClaimsRegistry(
            now=int(self.clock()), leeway=s.leeway,
            iss={"essential": True, "value": s.issuer},
            aud={"essential": True, "values": list(s.audience)},
            exp={"essential": True})
        try:
            registry.validate(claims)
        except ExpiredTokenError:
            return invalid("the token has expired")
        except ClaimError as exc:
            what = {"iss": "the token is from another issuer",
                    "aud": "the token was not issued for this server (audience)",
                    "nbf": "the token is not valid yet",
                    "iat": "the token was issued in the future"}
            return invalid(what.get(str(getattr(exc, "claim", "")), f"the token's claims "
                                    f"are not accepted ({exc.description})"))
        actor = claims.get(s.actor_claim)
        try:
            check_grant(actor, ROLES[0])
        except ValidationError as exc:
            return invalid(f"claim {s.actor_claim!r} does not name an actor: {exc}")
        scopes = _scopes(claims, s.scope_claims)
        roles = {s.scopes[x] for x in scopes if x in s.scopes}
        if not roles:
            need = s.scope_for(Permission.READ)
            return Refused(403, "insufficient_scope",
                           f"the token carries none of the scopes this server maps to a "
                           f"role (ask for {need})", need)
        role = max(roles, key=ROLES.index)
        assert isinstance(actor, str)
        return Accepted(Principal(actor, role), scopes)
