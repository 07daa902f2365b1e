"""The federation guard: each refusal, and one allowed fetch from a local HTTPS server.

The server listens on 127.0.0.1 with a certificate for ``kcp.test`` from a CA made in the
test. Only the allowed-fetch tests pass a resolver stub mapping ``kcp.test`` to 127.0.0.1,
an address policy that also admits loopback, and a client context trusting the test CA;
every other test keeps some part of the default policy and shows it refusing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sediment.kcp import (
    RemotePolicy,
    RemoteRefused,
    fetch_manifest,
    parse_manifest,
    public_only,
    resolve_federation,
)
from sediment.kcp.model import ManifestRef
from sediment.kcp.remote import IPAddress, version_matches
from tests.kcp.helpers import manifest, unit
from tests.kcp.tls import HOST, LocalCA, Route, https_server, make_ca

pytestmark = pytest.mark.timeout(60)


def stub(table: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"stub resolver: unknown host {host}")
        return table[host]
    return resolve


def loopback_too(ip: IPAddress) -> bool:
    return ip.is_loopback or public_only(ip)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> LocalCA:
    return make_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def trusted(ca: LocalCA) -> RemotePolicy:
    """The one policy that may reach the local server (test only)."""
    return RemotePolicy(enabled=True, resolver=stub({HOST: ["127.0.0.1"]}),
                        address_allowed=loopback_too, ssl_context=ca.client_context(),
                        timeout=5.0)


@pytest.fixture
def served(ca: LocalCA) -> Iterator[tuple[int, dict[str, Route], list[str]]]:
    routes: dict[str, Route] = {}
    with https_server(ca, routes) as (port, requested):
        yield port, routes, requested


def refused(url: str, policy: RemotePolicy, rule: str) -> RemoteRefused:
    with pytest.raises(RemoteRefused) as exc:
        fetch_manifest(url, policy)
    assert exc.value.rule == rule, str(exc.value)
    return exc.value


def test_the_allowed_fetch(served: tuple[int, dict[str, Route], list[str]],
                           trusted: RemotePolicy) -> None:
    port, routes, _ = served
    routes["/k.yaml"] = Route(manifest(unit("remote-unit")).encode())
    body = fetch_manifest(f"https://{HOST}:{port}/k.yaml", trusted)
    result = parse_manifest(body)
    assert result.valid and result.manifest and result.manifest.units[0].id == "remote-unit"


def test_remote_is_off_by_default() -> None:
    refused("https://example.com/k.yaml", RemotePolicy(), "remote.disabled")


@pytest.mark.parametrize("url", ["http://example.com/k.yaml", "ftp://example.com/k.yaml",
                                 "file:///etc/passwd"])
def test_only_https(url: str) -> None:
    refused(url, RemotePolicy(enabled=True), "remote.https")


def test_user_info_is_refused() -> None:
    refused("https://user:pw@example.com/k.yaml", RemotePolicy(enabled=True), "remote.url")


@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1",
                                     "172.31.255.255", "192.168.1.1", "169.254.169.254",
                                     "100.64.0.1", "0.0.0.0", "::1", "fe80::1", "fd00::1",
                                     "::ffff:127.0.0.1", "::ffff:10.0.0.1", "224.0.0.1"])
def test_non_public_addresses_are_refused_after_resolution(address: str) -> None:
    policy = RemotePolicy(enabled=True, resolver=stub({"evil.example": [address]}))
    err = refused("https://evil.example/k.yaml", policy, "remote.address")
    assert str(ipaddress.ip_address(address)) in str(err)


def test_ip_literals_go_through_the_same_check() -> None:
    refused("https://127.0.0.1/k.yaml", RemotePolicy(enabled=True), "remote.address")
    refused("https://[::1]/k.yaml", RemotePolicy(enabled=True), "remote.address")


def test_one_private_answer_among_public_ones_is_refused() -> None:
    policy = RemotePolicy(enabled=True,
                          resolver=stub({"mixed.example": ["93.184.216.34", "10.0.0.7"]}))
    refused("https://mixed.example/k.yaml", policy, "remote.address")


@pytest.mark.parametrize("address", [
    "64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b::a9fe:a9fe",  # NAT64 of loopback, 10/8, IMDS
    "2002:7f00:1::1", "2002:a00:1::1", "2002:c0a8:101::1",      # 6to4 of the same
    "::127.0.0.1", "::10.0.0.1", "::8.8.8.8",                   # IPv4-compatible (deprecated)
    "::ffff:0:7f00:1",                                          # SIIT-translated loopback
    "64:ff9b:1::808:808",                                       # local-use NAT64
    "fec0::1", "feff::1",                                       # site-local (deprecated)
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",                     # Teredo
])
def test_ipv6_that_reaches_a_private_ipv4_or_is_never_public_is_refused(address: str) -> None:
    assert not public_only(ipaddress.ip_address(address))
    policy = RemotePolicy(enabled=True, resolver=stub({"evil.example": [address]}))
    refused("https://evil.example/k.yaml", policy, "remote.address")


@given(st.ip_addresses(v=4))
def test_an_embedded_ipv4_is_judged_as_that_ipv4(v4: ipaddress.IPv4Address) -> None:
    expected = public_only(v4)
    for wrapped in (f"64:ff9b::{v4}", f"::ffff:{v4}"):
        assert public_only(ipaddress.ip_address(wrapped)) == expected, wrapped
    six = ipaddress.IPv6Address((0x2002 << 112) | (int(v4) << 80) | 1)
    assert public_only(six) == expected, six


def test_public_only_admits_global_unicast() -> None:
    assert public_only(ipaddress.ip_address("64:ff9b::808:808"))
    assert public_only(ipaddress.ip_address("2002:808:808::1"))
    assert public_only(ipaddress.ip_address("93.184.216.34"))
    assert public_only(ipaddress.ip_address("2606:2800:220:1:248:1893:25c8:1946"))


def test_the_default_policy_refuses_the_local_server(
        served: tuple[int, dict[str, Route], list[str]], trusted: RemotePolicy) -> None:
    port, routes, requested = served
    routes["/k.yaml"] = Route(manifest().encode())
    policy = replace(trusted, address_allowed=public_only)
    refused(f"https://{HOST}:{port}/k.yaml", policy, "remote.address")
    assert requested == []


def test_an_untrusted_certificate_is_refused(
        served: tuple[int, dict[str, Route], list[str]], trusted: RemotePolicy) -> None:
    port, routes, _ = served
    routes["/k.yaml"] = Route(manifest().encode())
    refused(f"https://{HOST}:{port}/k.yaml", replace(trusted, ssl_context=None), "remote.tls")


def test_size_limits(served: tuple[int, dict[str, Route], list[str]],
                     trusted: RemotePolicy) -> None:
    port, routes, _ = served
    routes["/big.yaml"] = Route(b"#" * 5000)
    policy = replace(trusted, max_bytes=4000)
    refused(f"https://{HOST}:{port}/big.yaml", policy, "remote.size")


def test_time_limit(served: tuple[int, dict[str, Route], list[str]],
                    trusted: RemotePolicy) -> None:
    port, routes, _ = served
    routes["/slow.yaml"] = Route(manifest().encode(), delay=2.0)
    refused(f"https://{HOST}:{port}/slow.yaml", replace(trusted, timeout=0.5),
            "remote.timeout")


def test_redirects_are_checked_again(served: tuple[int, dict[str, Route], list[str]],
                                     trusted: RemotePolicy) -> None:
    port, routes, _ = served
    routes["/to-http"] = Route(status=302, headers={"Location": "http://kcp.test/k.yaml"})
    routes["/to-private"] = Route(status=301, headers={"Location": "https://intranet/k.yaml"})
    routes["/loop"] = Route(status=302, headers={"Location": "/loop"})
    routes["/moved"] = Route(status=302, headers={"Location": "/k.yaml"})
    routes["/k.yaml"] = Route(manifest().encode())
    policy = replace(trusted, resolver=stub({HOST: ["127.0.0.1"], "intranet": ["10.0.0.5"]}))
    base = f"https://{HOST}:{port}"
    refused(f"{base}/to-http", policy, "remote.https")
    refused(f"{base}/to-private", policy, "remote.address")
    refused(f"{base}/loop", policy, "remote.status")
    assert parse_manifest(fetch_manifest(f"{base}/moved", policy)).valid


LONG_LABEL = "a" * 300


@pytest.mark.parametrize("url", [
    f"https://{LONG_LABEL}.example/k.yaml", f"https://{'é' * 70}.example/k.yaml",
    "https://a..b/k.yaml", f"https://{'abc.' * 70}example/k.yaml", "https://[::1/k.yaml",
    "https://[zz]/k.yaml", "https://example.com:99999/k.yaml",
], ids=["300-char label", "long idna label", "empty label", "name over 253", "bad ipv6",
        "bad ip literal", "bad port"])
def test_invalid_hosts_are_refused_as_invalid_urls(url: str) -> None:
    """Refused before any lookup: the IDNA codec raised UnicodeError (exit 70) for these."""
    err = refused(url, RemotePolicy(enabled=True), "remote.url")
    assert "not a valid" in str(err)


def test_redirects_to_invalid_urls_are_refused(
        served: tuple[int, dict[str, Route], list[str]], trusted: RemotePolicy) -> None:
    port, routes, _ = served
    routes["/to-ipv6"] = Route(status=302, headers={"Location": "https://[::1/k.yaml"})
    routes["/to-long"] = Route(status=302, headers={
        "Location": f"https://{LONG_LABEL}.example/k.yaml"})
    refused(f"https://{HOST}:{port}/to-ipv6", trusted, "remote.url")
    refused(f"https://{HOST}:{port}/to-long", trusted, "remote.url")


def test_federation_refuses_an_unparseable_url() -> None:
    top = root_manifest()
    top.manifests = [ManifestRef("bad", "https://[::1/k.yaml")]  # type: ignore[attr-defined]
    fed = resolve_federation(top, RemotePolicy(enabled=True))  # type: ignore[arg-type]
    assert [e.rule for e in fed.refused] == ["remote.url"] and not fed.manifests


def test_http_errors(served: tuple[int, dict[str, Route], list[str]],
                     trusted: RemotePolicy) -> None:
    port, _, _ = served
    refused(f"https://{HOST}:{port}/missing.yaml", trusted, "remote.status")


def ref(mid: str, url: str, **extra: object) -> dict[str, object]:
    return {"id": mid, "url": url, **extra}


def root_manifest(*refs: dict[str, object]) -> object:
    r = parse_manifest(manifest(unit("local"), manifests=list(refs)))
    assert r.manifest is not None
    return r.manifest


def test_federation_cycles_and_diamonds_fetch_each_manifest_once(
        served: tuple[int, dict[str, Route], list[str]], trusted: RemotePolicy) -> None:
    port, routes, requested = served
    base = f"https://{HOST}:{port}"
    routes["/a.yaml"] = Route(manifest(unit("a"), manifests=[
        ref("b", f"{base}/b.yaml"), ref("c", "/c.yaml")]).encode())
    routes["/b.yaml"] = Route(manifest(unit("b"), manifests=[
        ref("d", f"{base}/d.yaml"), ref("a", f"{base}/a.yaml")]).encode())
    routes["/c.yaml"] = Route(manifest(unit("c"), manifests=[ref("d", "d.yaml")]).encode())
    routes["/d.yaml"] = Route(manifest(unit("d"), version="2.5.0").encode())
    top = root_manifest(ref("a", f"{base}/a.yaml"))
    fed = resolve_federation(top, trusted)  # type: ignore[arg-type]
    assert sorted(requested) == ["/a.yaml", "/b.yaml", "/c.yaml", "/d.yaml"]
    assert [(m.id, m.depth) for m in fed.manifests] == [("a", 1), ("b", 2), ("c", 2), ("d", 3)]
    assert not fed.refused


def test_federation_depth_limit(served: tuple[int, dict[str, Route], list[str]],
                                trusted: RemotePolicy) -> None:
    port, routes, _ = served
    base = f"https://{HOST}:{port}"
    for n in range(8):
        routes[f"/m{n}.yaml"] = Route(manifest(unit(f"u{n}"), manifests=[
            ref(f"m{n + 1}", f"{base}/m{n + 1}.yaml")]).encode())
    fed = resolve_federation(root_manifest(ref("m0", f"{base}/m0.yaml")),  # type: ignore[arg-type]
                             trusted)
    assert [m.depth for m in fed.manifests] == [1, 2, 3, 4, 5]
    assert any("more than 5 hops" in w for w in fed.warnings)


def test_federation_collects_refusals_and_honours_local_mirrors(tmp_path: Path) -> None:
    (tmp_path / "mirrors").mkdir()
    (tmp_path / "mirrors" / "platform.yaml").write_text(
        manifest(unit("platform-unit"), version="2.3.0"))
    top = root_manifest(
        ref("platform", "https://platform.example/k.yaml", local_mirror="mirrors/platform.yaml",
            version_pin="3.0.0"),
        ref("private", "https://intranet.example/k.yaml"),
        ref("relative", "/team/knowledge.yaml"))
    policy = RemotePolicy(enabled=True, resolver=stub({"intranet.example": ["10.9.9.9"]}))
    fed = resolve_federation(top, policy, base_dir=tmp_path)  # type: ignore[arg-type]
    assert [(m.id, m.directory) for m in fed.manifests] == [("platform", tmp_path / "mirrors")]
    assert [e.rule for e in fed.refused] == ["remote.address"]
    assert any("does not satisfy pin" in w for w in fed.warnings)
    assert any("relative url" in w for w in fed.warnings)


def test_version_policies() -> None:
    assert version_matches("2.3.0", "2.1.0", "compatible")
    assert not version_matches("3.0.0", "2.1.0", "compatible")
    assert version_matches("2.1.0", "2.1.0", "exact")
    assert not version_matches("2.1.1", "2.1.0", "exact")
    assert version_matches("2.10.0", "2.9.0", "minimum")
    assert not version_matches("1.9.9", "2.0.0", "minimum")
