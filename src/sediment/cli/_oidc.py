"""``serve --oidc-*``: accept access tokens from the team's identity provider
(docs/security.md, "Signing in through an identity provider")."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sediment.errors import ConfigError

if TYPE_CHECKING:
    from sediment.auth.oidc import OidcSettings

F = TypeVar("F", bound=Callable[..., Any])


def oidc_options(f: F) -> F:
    """The ``--oidc-*`` options of ``serve`` (each also read from a SEDIMENT_OIDC_*
    variable; the repeatable ones from a space-separated list)."""
    options = [
        click.option("--oidc-issuer", default=None, envvar="SEDIMENT_OIDC_ISSUER",
                     help="Accept OAuth access tokens (JWT) from this OpenID issuer, exactly "
                          "as its tokens' iss claim spells it (http).", metavar="URL"),
        click.option("--oidc-resource", default=None, envvar="SEDIMENT_OIDC_RESOURCE",
                     metavar="URL",
                     help="This server's MCP endpoint URL as clients reach it: the resource "
                          "clients ask tokens for (default on loopback: "
                          "http://HOST:PORT/PATH; required elsewhere)."),
        click.option("--oidc-audience", multiple=True, envvar="SEDIMENT_OIDC_AUDIENCE",
                     metavar="AUD",
                     help="An aud value to accept (repeatable; default: the resource)."),
        click.option("--oidc-actor-claim", default="sub", show_default=True,
                     envvar="SEDIMENT_OIDC_ACTOR_CLAIM",
                     help="The claim whose value is the actor (e.g. preferred_username)."),
        click.option("--oidc-scope", "oidc_scopes", multiple=True,
                     envvar="SEDIMENT_OIDC_SCOPES", metavar="SCOPE=ROLE",
                     help="A scope and the role it grants (repeatable; default "
                          "sediment:ROLE=ROLE for reader, writer, reviewer, admin)."),
        click.option("--oidc-scope-claim", "oidc_scope_claims", multiple=True,
                     envvar="SEDIMENT_OIDC_SCOPE_CLAIMS", metavar="CLAIM",
                     help="Claims holding the token's scopes (repeatable; default: "
                          "scope, scp; Entra app roles: roles)."),
        click.option("--oidc-web-client-id", default=None,
                     envvar="SEDIMENT_OIDC_WEB_CLIENT_ID", metavar="ID",
                     help="Let the web page sign in through the provider as this client "
                          "(authorization code + PKCE; redirect URI: the resource's origin "
                          "+ /ui/oidc/callback; a confidential client's secret in "
                          "SEDIMENT_OIDC_WEB_CLIENT_SECRET)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def oidc_settings(params: dict[str, Any], *, host: str, port: int, path: str,
                  loopback: bool) -> OidcSettings | None:
    """The settings the ``--oidc-*`` options in ``params`` give (popped), or None without
    ``--oidc-issuer``."""
    from sediment.auth.oidc import DEFAULT_SCOPE_CLAIMS, OidcSettings, parse_scope_map

    issuer = params.pop("oidc_issuer", None)
    resource = params.pop("oidc_resource", None)
    audience = tuple(params.pop("oidc_audience", ()) or ())
    actor_claim = params.pop("oidc_actor_claim", "sub")
    scopes = tuple(params.pop("oidc_scopes", ()) or ())
    claims = tuple(params.pop("oidc_scope_claims", ()) or ())
    if not issuer:
        given = [n for n, v in (("--oidc-resource", resource), ("--oidc-audience", audience),
                                ("--oidc-scope", scopes)) if v]
        if given:
            raise ConfigError(f"{given[0]} needs --oidc-issuer")
        return None
    if not resource:
        if not loopback:
            raise ConfigError("--oidc-issuer off loopback needs --oidc-resource: the URL "
                              "clients reach the MCP endpoint at, e.g. "
                              "https://sediment.example.com/mcp")
        shown = f"[{host}]" if ":" in host else host
        resource = f"http://{shown}:{port}{path}"
    return OidcSettings(issuer=issuer, resource=resource, audience=audience,
                        actor_claim=actor_claim, scopes=parse_scope_map(scopes),
                        scope_claims=claims or DEFAULT_SCOPE_CLAIMS)
