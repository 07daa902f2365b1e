"""A real OpenID provider for the tests: ``oidc-provider`` (npm) run by Node from
tests/auth/oidc_provider.mjs, with signing keys this module makes (so a test can also sign a
token exactly as the provider would, with one claim changed).

``./run test`` installs the package into build/npm (SEDIMENT_OIDC_PROVIDER may point at
another copy of its ``lib/index.js``). Without Node the tests skip, naming why; under CI they
fail instead.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from tests.conftest import CI, REPO
from tests.mcp.conftest import free_port, stop

SCRIPT = Path(__file__).with_name("oidc_provider.mjs")
MODULE = Path(os.environ.get("SEDIMENT_OIDC_PROVIDER", REPO / "build" / "npm" / "node_modules"
                             / "oidc-provider" / "lib" / "index.js"))
START_WAIT = 60.0
"""How long the provider may take to print that it listens: a bound, not a timing."""
SECRETS = {"agent": "agent-secret", "reader": "reader-secret"}


def node() -> str:
    """The ``node`` executable; skip (fail under CI) without it or without the package."""
    found = shutil.which("node")
    if found is None:
        reason = "needs Node.js (node) to run the OpenID provider oidc-provider"
        if CI:
            pytest.fail(f"{reason}; CI must have it", pytrace=False)
        pytest.skip(reason)
    if not MODULE.exists():
        pytest.fail(f"{MODULE} is missing: `./run test` installs oidc-provider from npm",
                    pytrace=False)
    return found


def signing_key(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "RS256", "use": "sig"})


class Provider:
    """One provider process on a fixed port (its issuer URL), restartable with new keys."""

    def __init__(self, directory: Path) -> None:
        self.node = node()
        self.directory = directory
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.key = signing_key("k1")
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        keys = self.directory / f"keys-{self.key.kid}.json"
        keys.write_text(json.dumps({"keys": [self.key.as_dict(private=True)]}))
        self.process = subprocess.Popen(
            [self.node, str(SCRIPT), str(MODULE), str(self.port), str(keys)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.process.stdout is not None
        deadline = time.monotonic() + START_WAIT
        line = b""
        while not line.startswith(b"ready"):
            left = deadline - time.monotonic()
            if self.process.poll() is not None or left <= 0:
                self.stop()
                raise RuntimeError(f"the OpenID provider did not start within {START_WAIT} s")
            ready, _, _ = select.select([self.process.stdout], [], [], left)
            if ready:
                line = self.process.stdout.readline()

    def stop(self) -> None:
        if self.process is not None:
            if self.process.stdout:
                self.process.stdout.close()
            stop(self.process)
            self.process = None

    def rotate(self, kid: str) -> None:
        """Restart with only a new signing key (the old one withdrawn)."""
        self.stop()
        self.key = signing_key(kid)
        self.start()

    def grant(self, client: str, scope: str) -> None:
        """What the provider lets ``client`` have from now on (an admin's role change)."""
        r = httpx.post(f"{self.issuer}/test/grant", json={"client": client, "scope": scope},
                       timeout=30)
        assert r.status_code == 204, r.text

    def token(self, client: str, resource: str,
              scope: str = "sediment:reader sediment:writer") -> str:
        """An access token for ``resource`` through the client credentials grant."""
        r = httpx.post(f"{self.issuer}/token", auth=(client, SECRETS[client]), timeout=30,
                       data={"grant_type": "client_credentials", "scope": scope,
                             "resource": resource})
        assert r.status_code == 200, r.text
        token: str = r.json()["access_token"]
        return token

    def resign(self, token: str, key: RSAKey | None = None, **changes: Any) -> str:
        """``token`` with ``changes`` to its claims (None removes one), signed with the
        provider's key (or ``key``, whose id the header then names)."""
        decoded = jwt.decode(token, self.key)
        claims = {**decoded.claims, **changes}
        claims = {k: v for k, v in claims.items() if v is not None}
        key = key or self.key
        return jwt.encode({**decoded.header, "kid": key.kid}, claims, key)
