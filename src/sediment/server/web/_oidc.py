"""Signing in to the page through the team's identity provider: the authorization code
flow with PKCE (S256), for the same provider the MCP endpoint trusts.

``/ui/oidc/start`` remembers a fresh ``state`` and PKCE verifier (in memory, ten minutes,
bound to the browser by a cookie that only the callback reads) and sends the browser to the
provider, asking for a token for this server's resource (RFC 8707). ``/ui/oidc/callback``
checks the state against that cookie, redeems the code with the verifier at the token
endpoint, and checks the access token exactly as the MCP endpoint does
(:class:`~sediment.auth.oidc.JwtVerifier`): its actor and role open the page's session.
The token is then dropped: the page keeps only its own session.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from sediment.auth.oidc import Accepted, IdentityProviderError, JwtVerifier

STATE_COOKIE = "sediment_oidc"
STATE_SECONDS = 600
MAX_PENDING = 256
CALLBACK = "/ui/oidc/callback"
_log = logging.getLogger("sediment.server")


@dataclass(frozen=True, slots=True)
class Pending:
    verifier: str
    target: str
    expires: float


class SignInFailed(Exception):
    """What to tell the person on the sign-in page."""


class WebSignIn:
    """The page's sign-in through the provider: ``client_id`` (and ``client_secret`` for a
    confidential client) registered there with this server's callback URL."""

    def __init__(self, verifier: JwtVerifier, client_id: str,
                 client_secret: str | None = None) -> None:
        self.verifier = verifier
        self.client_id = client_id
        self.client_secret = client_secret
        parts = urlsplit(verifier.settings.resource)
        self.redirect_uri = f"{parts.scheme}://{parts.netloc}{CALLBACK}"
        self._pending: OrderedDict[str, Pending] = OrderedDict()
        self._lock = threading.Lock()

    async def start(self, target: str) -> tuple[str, str]:
        """(the provider's authorization URL to send the browser to, the state)."""
        state = secrets.token_urlsafe(32)
        code_verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(
            hashlib.sha256(code_verifier.encode()).digest()).rstrip(b"=").decode()
        now = time.monotonic()
        with self._lock:
            for key in [k for k, v in self._pending.items() if v.expires < now]:
                del self._pending[key]
            while len(self._pending) >= MAX_PENDING:
                self._pending.popitem(last=False)
            self._pending[state] = Pending(code_verifier, target, now + STATE_SECONDS)
        settings = self.verifier.settings
        query = urlencode({
            "response_type": "code", "client_id": self.client_id,
            "redirect_uri": self.redirect_uri, "state": state,
            "scope": " ".join(["openid", *settings.scopes]),
            "code_challenge": challenge, "code_challenge_method": "S256",
            "resource": settings.resource})
        endpoint = await self.verifier.endpoint("authorization_endpoint")
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}", state

    async def finish(self, state: str, cookie: str, code: str,
                     error: str) -> tuple[Accepted, str]:
        """(who signed in, the page to go to); :class:`SignInFailed` says why not."""
        if not state or not hmac.compare_digest(state.encode("utf-8", "replace"),
                                                cookie.encode("utf-8", "replace")):
            raise SignInFailed("The sign-in did not start in this browser or has expired; "
                               "please try again.")
        with self._lock:
            pending = self._pending.pop(state, None)
        if pending is None or pending.expires < time.monotonic():
            raise SignInFailed("The sign-in expired; please try again.")
        if error or not code:
            raise SignInFailed(f"The identity provider refused the sign-in "
                               f"({error[:80] or 'no code'}).")
        data = {"grant_type": "authorization_code", "code": code,
                "redirect_uri": self.redirect_uri, "code_verifier": pending.verifier,
                "resource": self.verifier.settings.resource}
        auth = None
        if self.client_secret:
            auth = (self.client_id, self.client_secret)
        else:
            data["client_id"] = self.client_id
        try:
            answer = await self.verifier.post_form(
                await self.verifier.endpoint("token_endpoint"), data, auth)
            token = answer.get("access_token")
            if not isinstance(token, str):
                raise SignInFailed("The identity provider gave no access token "
                                   f"({str(answer.get('error', ''))[:80]}).")
            outcome = await self.verifier.verify(token)
        except IdentityProviderError as exc:
            _log.warning("%s", exc)
            raise SignInFailed("The identity provider cannot be reached; the server's log "
                               "says why.") from exc
        if not isinstance(outcome, Accepted):
            raise SignInFailed(f"The identity provider's token is not accepted: "
                               f"{outcome.description}.")
        return outcome, pending.target
