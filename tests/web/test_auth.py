"""Sessions, one-time links, reviewer names and the Host/Origin policy, as units."""


from __future__ import annotations

from pathlib import Path

import pytest

from sediment.auth import TokenStore
from sediment.auth.tokens import FailClosed
from sediment.server.hosts import HostPolicy
from sediment.server.web import _auth
from sediment.server.web._auth import (
    MAX_PER_ACTOR,
    Session,
    Sessions,
    allowed,
    clean_name,
    csrf_ok,
    same_origin,
)


def sign_in(s: Sessions, token: str, reviewer: str) -> Session | None:
    """What the sign-in form does with a token and a name: the token's principal opens a
    session; an actor token names the reviewer itself."""
    got = s.authenticate(token)
    if got is None:
        return None
    principal, token_id = got
    return s.open(principal, principal.actor if token_id else reviewer, token_id)


def test_sign_in_needs_the_token_when_there_is_one() -> None:
    s = Sessions("secret-token-0123456789")
    assert sign_in(s, "wrong", "alice") is None
    ok = sign_in(s, "secret-token-0123456789", "alice")
    assert ok is not None and s.get(ok.id) is ok and ok.reviewer == "alice"
    s.end(ok.id)
    assert s.get(ok.id) is None
    assert sign_in(Sessions(None), "", "bob") is not None


def test_a_link_signs_in_once() -> None:
    s = Sessions("secret-token-0123456789")
    code = s.issue_link("alice")
    first = s.redeem(code)
    assert first is not None and first.reviewer == "alice"
    assert s.redeem(code) is None
    assert s.redeem("made-up") is None


def test_sessions_are_bounded() -> None:
    s = Sessions(None)
    made = [sign_in(s, "", f"r{i}") for i in range(300)]
    assert all(m is not None for m in made)
    assert s.get(made[0].id if made[0] else "") is None
    assert s.get(made[-1].id if made[-1] else "") is not None


@pytest.mark.parametrize(("raw", "name"), [
    ("alice", "alice"), ("  Ada   Lovelace ", "Ada Lovelace"), ("", None), ("   ", None),
    ("x" * 65, None), ("bell\x07", None)])
def test_reviewer_names(raw: str, name: str | None) -> None:
    assert clean_name(raw) == name


def test_csrf_compares_exactly() -> None:
    assert csrf_ok("abc", "abc")
    assert not csrf_ok("abc", "abd") and not csrf_ok("abc", None) and not csrf_ok("abc", 1)


def test_origin_policy() -> None:
    p = HostPolicy(["127.0.0.1", "localhost", "[::1]"])
    assert p.host_ok("127.0.0.1:8765") and p.host_ok("localhost") and p.host_ok("[::1]:80")
    assert not p.host_ok("evil.example:8765") and not p.host_ok("127.0.0.1.evil:1")
    assert same_origin(None, "127.0.0.1:1", "http")
    assert same_origin("http://127.0.0.1:1", "127.0.0.1:1", "http")
    assert not same_origin("http://evil.example", "127.0.0.1:1", "http")
    assert not same_origin("null", "127.0.0.1:1", "http")
    assert HostPolicy(None).host_ok("anything.example")


def test_an_actor_token_signs_in_as_its_actor_and_role(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path / "tokens.json")
    open_server = Sessions(None, tokens, actor="server")
    assert not open_server.needs_token
    anyone = sign_in(open_server, "", "dana")
    assert anyone is not None and (anyone.actor, anyone.role, anyone.reviewer) == \
        ("server", "writer", "dana")
    secret, _ = tokens.create("alice", "reader")
    assert open_server.needs_token and sign_in(open_server, "", "dana") is None
    alice = sign_in(open_server, secret, "someone else")
    assert alice is not None
    assert (alice.actor, alice.role, alice.reviewer) == ("alice", "reader", "alice")
    assert allowed(alice, "reader") and not allowed(alice, "writer")
    shared = sign_in(Sessions("shared-token-0123456789", tokens, actor="server"),
        "shared-token-0123456789", "erin")
    assert shared is not None and (shared.actor, shared.reviewer) == ("server", "erin")
    assert allowed(shared, "reviewer")
    shared.role = "superuser"
    assert not allowed(shared, "reader")


def test_revoking_an_actor_token_ends_its_sessions(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path / "tokens.json")
    secret, info = tokens.create("alice", "writer")
    other, _ = tokens.create("bob", "writer")
    s = Sessions(None, tokens, actor="server")
    alice, bob = sign_in(s, secret, ""), sign_in(s, other, "")
    assert alice is not None and bob is not None and s.get(alice.id) is alice
    tokens.revoke(info.id)
    assert s.get(alice.id) is None and s.get(bob.id) is bob


def test_without_tokens_a_name_signs_in_as_a_writer_who_cannot_decide() -> None:
    """Issue 26 item 5: a name alone gave the admin role, so an agent could accept its own
    proposal; it gives what the MCP endpoint gives (writer). The link still decides."""
    s = Sessions(None, actor="server")
    anyone = sign_in(s, "", "mallory")
    assert anyone is not None and anyone.role == "writer"
    assert allowed(anyone, "writer") and not allowed(anyone, "reviewer")
    linked = s.redeem(s.issue_link("alice"))
    assert linked is not None and allowed(linked, "reviewer")


@pytest.mark.parametrize("code", ["\u00e9t\u00e9", "\u2603" * 43, "\ud800", "", "a" * 5000])
def test_any_string_is_merely_not_a_link_code(code: str) -> None:
    """Issue 26 item 13: a non-ASCII code raised TypeError in compare_digest (a 500)."""
    s = Sessions("secret-token-0123456789")
    real = s.issue_link("alice")
    assert s.redeem(code) is None
    assert s.redeem(real) is not None
    assert sign_in(s, code, "alice") is None
    assert not csrf_ok("abc", code)


def test_expired_links_are_purged(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Sessions("secret-token-0123456789")
    old = [s.issue_link(f"r{i}") for i in range(3)]
    later = _auth.time.monotonic() + _auth.LINK_SECONDS + 1
    monkeypatch.setattr(_auth.time, "monotonic", lambda: later)
    s.issue_link("bob")  # issuing purges: expired links are dropped, not kept up to 16
    assert len(s._links) == 1
    assert all(s.redeem(code) is None for code in old)


def test_one_actor_signing_in_again_and_again_signs_no_one_else_out(tmp_path: Path) -> None:
    """Issue 26 item 14: sessions were capped at 256 globally, so a reader signing in 256
    times ended every reviewer's session. The cap is per actor."""
    tokens = TokenStore(tmp_path / "tokens.json")
    reviewer, _ = tokens.create("rita", "reviewer")
    reader, _ = tokens.create("rob", "reader")
    s = Sessions(None, tokens, actor="server")
    rita = sign_in(s, reviewer, "")
    robs = [sign_in(s, reader, "") for _ in range(1000)]
    assert rita is not None and s.get(rita.id) is rita
    live = [r for r in robs if r is not None and s.get(r.id) is not None]
    assert len(live) == MAX_PER_ACTOR and live[-1] is robs[-1]


def test_a_gate_that_needed_a_token_always_does(tmp_path: Path) -> None:
    """Issue 26 item 1: revoking the last token (or emptying the file) turned
    authentication off; a server bound off loopback needs a token from the start."""
    tokens = TokenStore(tmp_path / "tokens.json")
    gate = FailClosed(tokens)
    assert not gate.any()
    secret, info = tokens.create("alice", "writer")
    assert gate.any() and gate.verify(secret) is not None
    tokens.revoke(info.id)
    assert gate.any() and gate.verify(secret) is None
    (tmp_path / "tokens.json").write_text('{"version": 1, "tokens": []}')
    assert gate.any()
    assert FailClosed(TokenStore(tmp_path / "none.json"), required=True).any()
    (tmp_path / "bad.json").write_text("{not json")
    assert FailClosed(TokenStore(tmp_path / "bad.json")).any()
    page = Sessions(None, gate, actor="server")
    assert page.needs_token and sign_in(page, "", "mallory") is None


@pytest.mark.parametrize("host", [
    "127.0.0.1:8765@evil.example", "127.0.0.1:8765.evil.example", "127.0.0.1:",
    "127.0.0.1:99999", "127.0.0.1:80:80", "localhost.:80", " localhost", "localhost ",
    "[::1]evil", "[::1]:80@x", "127.0.0.1/x", "", "user@127.0.0.1:80", "127.0.0.1:+80"])
def test_hosts_are_matched_whole_not_by_prefix(host: str) -> None:
    """Issue 26 item 16."""
    p = HostPolicy(["127.0.0.1", "localhost", "[::1]"])
    assert not p.host_ok(host)
    assert not p.origin_ok(f"http://{host}")


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:8765", "LOCALHOST:1",
                                  "localhost", "[::1]:65535", "[::1]"])
def test_loopback_hosts_pass(host: str) -> None:
    p = HostPolicy(["127.0.0.1", "localhost", "[::1]"])
    assert p.host_ok(host) and p.origin_ok(f"http://{host}")
    assert not p.origin_ok(f"https://{host}") and not p.origin_ok(f"http://{host}/")
    assert not p.origin_ok("null")
