"""Fetching federated manifests (KCP 3.6, 12.3): off by default, and guarded when on.

Every fetch, and every redirect it follows, must pass the same checks:

- ``RemotePolicy.enabled`` is false unless a caller turns it on;
- the URL is ``https://`` with a host and no user info;
- the host is resolved once (``resolver``) and *every* address must pass
  ``address_allowed`` (default ``public_only``: no private, loopback, link-local, shared,
  reserved or multicast addresses; an IPv6 address embedding an IPv4 one (mapped, NAT64,
  6to4) is judged by that IPv4 address too); the connection then goes to
  that checked address (TLS still verifies the host name), so a DNS answer that changes
  between check and connect (rebinding) cannot redirect it;
- the body is read up to ``max_bytes`` (1 MB, KCP 3.6) within ``timeout`` seconds in all
  (10 s), and parsed with the safe loader and ``max_units``.

``resolve_federation`` walks ``manifests`` entries breadth-first with a visited set of URLs
(cycles and diamonds fetch each manifest once), at most ``max_depth`` hops (5) and
``max_manifests`` manifests (50); a ``local_mirror`` that exists is read instead of the URL.
Tests inject ``resolver``, ``address_allowed`` and ``ssl_context``; nothing else can
loosen the checks.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin

from sediment.kcp.errors import ManifestError, RemoteRefused
from sediment.kcp.model import Manifest, ManifestRef, ValidationResult
from sediment.kcp.paths import inside
from sediment.kcp.report import SEMVER
from sediment.kcp.urls import host_problem, split_url
from sediment.kcp.validate import parse_manifest, validate_file
from sediment.kcp.yamlsafe import Limits

__all__ = ["FederationResult", "IPAddress", "RemoteManifest", "RemotePolicy", "Resolver",
           "fetch_manifest", "public_only", "resolve_federation", "system_resolver",
           "version_matches"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]
_READ = 64 * 1024


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for ``host``."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_NEVER_PUBLIC = (
    ipaddress.IPv6Network("::/96"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
    ipaddress.IPv6Network("fec0::/10"),
    ipaddress.IPv6Network("2001::/32"),
)
"""IPv4-compatible (deprecated, RFC 4291), local-use NAT64 (RFC 8215), site-local
(deprecated, RFC 3879) and Teredo: never a public destination, whatever they embed."""


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a mapped, translated, NAT64 or 6to4 address reaches."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or ip in _TRANSLATED:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def public_only(ip: IPAddress) -> bool:
    """Only globally routable unicast addresses (KCP 12.3 and then some). An IPv6 address
    that carries an IPv4 one (mapped, NAT64, 6to4, SIIT) is judged by that IPv4 address
    too, since that is where a gateway sends the connection."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.is_unspecified or ip.is_loopback or any(ip in n for n in _NEVER_PUBLIC):
            return False
        inner = _embedded_ipv4(ip)
        if inner is not None:
            return public_only(inner)
    return ip.is_global and not ip.is_multicast


@dataclass(frozen=True, slots=True)
class RemotePolicy:
    enabled: bool = False
    max_depth: int = 5
    max_manifests: int = 50
    max_bytes: int = 1_000_000
    max_units: int = 10_000
    timeout: float = 10.0
    max_redirects: int = 3
    resolver: Resolver = system_resolver
    address_allowed: Callable[[IPAddress], bool] = public_only
    ssl_context: ssl.SSLContext | None = None

    @property
    def limits(self) -> Limits:
        return Limits(max_bytes=self.max_bytes, max_units=self.max_units)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to an address checked beforehand, verifying the certificate for ``host``."""

    def __init__(self, host: str, port: int, address: str, context: ssl.SSLContext,
                 timeout: float) -> None:
        super().__init__(host, port, context=context, timeout=timeout)
        self._address = address
        self._tls = context
        self.tls_socket: ssl.SSLSocket | None = None

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        try:
            self.sock = self.tls_socket = self._tls.wrap_socket(sock,
                                                                server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


def fetch_manifest(url: str, policy: RemotePolicy) -> bytes:
    """The body at ``url`` after every check; ``RemoteRefused`` says which one failed."""
    if not policy.enabled:
        raise RemoteRefused("remote manifests are disabled", rule="remote.disabled", url=url)
    deadline = time.monotonic() + policy.timeout
    context = policy.ssl_context or ssl.create_default_context()
    current = url
    for _ in range(policy.max_redirects + 1):
        host, port, address, target = _check(current, policy)
        conn = _PinnedHTTPS(host, port, address, context, _left(deadline, current))
        try:
            conn.request("GET", target, headers={"User-Agent": "sediment-kcp",
                                                 "Accept": "application/yaml, text/yaml, */*"})
            with conn.getresponse() as response:
                if response.status in (301, 302, 303, 307, 308):
                    location = response.getheader("Location")
                    if not location:
                        raise RemoteRefused("redirect without a Location",
                                            rule="remote.status", url=current)
                    current = _join(current, location)
                    continue
                if response.status != 200:
                    raise RemoteRefused(f"HTTP {response.status}", rule="remote.status",
                                        url=current)
                return _read_body(conn, response, policy, deadline, current)
        except TimeoutError as exc:
            raise RemoteRefused(f"no answer within {policy.timeout:g}s", rule="remote.timeout",
                                url=current) from exc
        except ssl.SSLError as exc:
            raise RemoteRefused(f"TLS failed: {exc.reason or exc}", rule="remote.tls",
                                url=current) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise RemoteRefused(f"network error: {exc}", rule="remote.network",
                                url=current) from exc
        finally:
            conn.close()
    raise RemoteRefused(f"more than {policy.max_redirects} redirects", rule="remote.status",
                        url=url)


def _join(base: str, reference: str) -> str:
    try:
        return urljoin(base, reference)
    except ValueError as exc:
        raise RemoteRefused(f"redirect to an invalid URL {reference[:200]!r}: {exc}",
                            rule="remote.url", url=base) from exc


def _left(deadline: float, url: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise RemoteRefused("the time limit ran out", rule="remote.timeout", url=url)
    return left


def _check(url: str, policy: RemotePolicy) -> tuple[str, int, str, str]:
    """(host, port, checked address, request target) or ``RemoteRefused``."""
    try:
        parts = split_url(url)
    except ValueError as exc:
        raise RemoteRefused(f"not a valid URL: {exc}", rule="remote.url", url=url) from exc
    if parts.scheme.lower() != "https":
        raise RemoteRefused("only https:// URLs are fetched (KCP 12.3)", rule="remote.https",
                            url=url)
    host = parts.hostname
    if not host or parts.username is not None or parts.password is not None:
        raise RemoteRefused("the URL needs a host and no user info", rule="remote.url",
                            url=url)
    problem = host_problem(host)
    if problem is not None:
        raise RemoteRefused(f"not a valid host name: {problem}", rule="remote.url", url=url)
    port = parts.port or 443
    try:
        addresses = policy.resolver(host, port)
    except OSError as exc:
        raise RemoteRefused(f"cannot resolve {host}: {exc}", rule="remote.dns",
                            url=url) from exc
    if not addresses:
        raise RemoteRefused(f"{host} resolves to no address", rule="remote.dns", url=url)
    for text in addresses:
        try:
            ip = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError as exc:
            raise RemoteRefused(f"resolver returned {text!r}", rule="remote.dns",
                                url=url) from exc
        if not policy.address_allowed(ip):
            raise RemoteRefused(f"{host} resolves to {ip}, a private, loopback, link-local or "
                                "otherwise non-public address (KCP 12.3)",
                                rule="remote.address", url=url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return host, port, addresses[0], target


def _read_body(conn: _PinnedHTTPS, response: http.client.HTTPResponse,
               policy: RemotePolicy, deadline: float, url: str) -> bytes:
    length = response.getheader("Content-Length")
    if length and length.isdigit() and int(length) > policy.max_bytes:
        raise RemoteRefused(f"{int(length):,} bytes is over the limit of "
                            f"{policy.max_bytes:,}", rule="remote.size", url=url)
    body = bytearray()
    while True:
        if conn.tls_socket is not None:
            conn.tls_socket.settimeout(_left(deadline, url))
        piece = response.read1(_READ)
        if not piece:
            return bytes(body)
        body += piece
        if len(body) > policy.max_bytes:
            raise RemoteRefused(f"more than {policy.max_bytes:,} bytes", rule="remote.size",
                                url=url)


@dataclass(slots=True)
class RemoteManifest:
    id: str
    url: str
    depth: int
    result: ValidationResult
    directory: Path | None = None


@dataclass(slots=True)
class FederationResult:
    manifests: list[RemoteManifest] = field(default_factory=list)
    refused: list[RemoteRefused] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def version_matches(version: str, pin: str, policy: str) -> bool:
    """KCP 3.6 version_policy: exact, minimum (>=) or compatible (same major)."""
    def key(v: str) -> tuple[int, int, int]:
        major, minor, patch = v.split("+")[0].split("-")[0].split(".")
        return int(major), int(minor), int(patch)

    if not (SEMVER.fullmatch(version) and SEMVER.fullmatch(pin)):
        return version == pin
    if policy == "exact":
        return version == pin
    if policy == "minimum":
        return key(version) >= key(pin)
    return key(version)[0] == key(pin)[0]


def resolve_federation(manifest: Manifest, policy: RemotePolicy, *,
                       base_url: str | None = None, base_dir: Path | None = None
                       ) -> FederationResult:
    """Fetch what ``manifest`` declares, transitively, under ``policy``.

    ``base_url`` is the manifest's own URL (for relative ``url`` values and the visited
    set); ``base_dir`` its directory (for ``local_mirror``). Failures are collected, never
    raised: each manifest is optional at run time (``on_failure``, KCP 3.6).
    """
    out = FederationResult()
    visited: set[str] = {base_url} if base_url else set()
    queue: deque[tuple[ManifestRef, int, str | None, Path | None]] = deque(
        (ref, 1, base_url, base_dir) for ref in manifest.manifests)
    while queue:
        ref, depth, parent_url, parent_dir = queue.popleft()
        try:
            url = urljoin(parent_url, ref.url) if parent_url else ref.url
            scheme = split_url(url).scheme
        except ValueError as exc:
            out.refused.append(RemoteRefused(f"not a valid URL: {exc}", rule="remote.url",
                                             url=ref.url))
            continue
        if not scheme:
            out.warnings.append(f"{ref.id}: relative url {ref.url!r} is not fetched for a "
                                "local manifest")
            continue
        if url in visited:
            continue
        if depth > policy.max_depth:
            out.warnings.append(f"{ref.id}: {url} is more than {policy.max_depth} hops away; "
                                "not fetched")
            continue
        if len(visited) >= policy.max_manifests:
            out.warnings.append(f"stopped at {policy.max_manifests} manifests; {url} and the "
                                "rest are not fetched")
            break
        visited.add(url)
        fetched = _load(ref, url, depth, policy, parent_dir, out)
        if fetched is None:
            continue
        out.manifests.append(fetched)
        remote = fetched.result.manifest
        if remote is None:
            continue
        if ref.version_pin and not version_matches(remote.version or "", ref.version_pin,
                                                   ref.version_policy):
            out.warnings.append(f"{ref.id}: version {remote.version!r} does not satisfy pin "
                                f"{ref.version_pin!r} ({ref.version_policy})")
        queue.extend((r, depth + 1, url, fetched.directory) for r in remote.manifests)
    return out


def _load(ref: ManifestRef, url: str, depth: int, policy: RemotePolicy,
          parent_dir: Path | None, out: FederationResult) -> RemoteManifest | None:
    """A local mirror when it exists (KCP 3.6 MUST), else the URL."""
    mirror = inside(parent_dir, ref.local_mirror) if ref.local_mirror and parent_dir else None
    if mirror is not None and mirror.is_file():
        result = validate_file(mirror, limits=policy.limits, check_files=False)
        return RemoteManifest(ref.id, url, depth, result, mirror.parent)
    try:
        data = fetch_manifest(url, policy)
        result = parse_manifest(data, source=url, limits=policy.limits)
    except RemoteRefused as exc:
        out.refused.append(exc)
        return None
    except ManifestError as exc:
        out.refused.append(RemoteRefused(f"not a usable manifest: {exc.detail}",
                                         rule=exc.rule, url=url))
        return None
    return RemoteManifest(ref.id, url, depth, result)
