"""Sessions, one-time links, reviewer names and the Host/Origin policy, as units."""

from __future__ import annotations

from pathlib import Path

import pytest

from sediment.auth import TokenStore
from sediment.server.web._auth import OriginPolicy, Sessions, allowed, clean_name, csrf_ok


def test_sign_in_needs_the_token_when_there_is_one() -> None:
    s = Sessions("secret-token-0123456789")
    assert s.sign_in("wrong", "alice") is None
    ok = s.sign_in("secret-token-0123456789", "alice")
    assert ok is not None and s.get(ok.id) is ok and ok.reviewer == "alice"
    s.end(ok.id)
    assert s.get(ok.id) is None
    assert Sessions(None).sign_in("", "bob") is not None


def test_a_link_signs_in_once() -> None:
    s = Sessions("secret-token-0123456789")
    code = s.issue_link("alice")
    first = s.redeem(code)
    assert first is not None and first.reviewer == "alice"
    assert s.redeem(code) is None
    assert s.redeem("made-up") is None


def test_sessions_are_bounded() -> None:
    s = Sessions(None)
    made = [s.sign_in("", f"r{i}") for i in range(300)]
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
    p = OriginPolicy(["127.0.0.1", "localhost", "[::1]"])
    assert p.host_ok("127.0.0.1:8765") and p.host_ok("localhost") and p.host_ok("[::1]:80")
    assert not p.host_ok("evil.example:8765") and not p.host_ok("127.0.0.1.evil:1")
    assert p.origin_ok(None, "127.0.0.1:1", "http")
    assert p.origin_ok("http://127.0.0.1:1", "127.0.0.1:1", "http")
    assert not p.origin_ok("http://evil.example", "127.0.0.1:1", "http")
    assert not p.origin_ok("null", "127.0.0.1:1", "http")
    assert OriginPolicy(None).host_ok("anything.example")


def test_an_actor_token_signs_in_as_its_actor_and_role(tmp_path: Path) -> None:
    tokens = TokenStore(tmp_path / "tokens.json")
    open_server = Sessions(None, tokens, actor="server")
    assert not open_server.needs_token
    anyone = open_server.sign_in("", "dana")
    assert anyone is not None and (anyone.actor, anyone.role, anyone.reviewer) == \
        ("server", "admin", "dana")
    secret, _ = tokens.create("alice", "reader")
    assert open_server.needs_token and open_server.sign_in("", "dana") is None
    alice = open_server.sign_in(secret, "someone else")
    assert alice is not None
    assert (alice.actor, alice.role, alice.reviewer) == ("alice", "reader", "alice")
    assert allowed(alice, "reader") and not allowed(alice, "writer")
    shared = Sessions("shared-token-0123456789", tokens, actor="server").sign_in(
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
    alice, bob = s.sign_in(secret, ""), s.sign_in(other, "")
    assert alice is not None and bob is not None and s.get(alice.id) is alice
    tokens.revoke(info.id)
    assert s.get(alice.id) is None and s.get(bob.id) is bob
