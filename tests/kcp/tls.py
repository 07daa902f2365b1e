"""A local HTTPS server with a test CA made on the fly (cryptography), for federation tests."""

from __future__ import annotations

import datetime as dt
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

HOST = "kcp.test"


@dataclass
class Route:
    body: bytes = b""
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class LocalCA:
    ca_pem: bytes
    cert_file: Path
    key_file: Path

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts only this CA."""
        ctx = ssl.create_default_context(cadata=self.ca_pem.decode())
        return ctx


def make_ca(directory: Path, names: tuple[str, ...] = (HOST,)) -> LocalCA:
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sediment test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(minutes=5))
          .not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                       False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_file, key_file = directory / "leaf.pem", directory / "leaf.key"
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return LocalCA(ca.public_bytes(serialization.Encoding.PEM), cert_file, key_file)


@contextmanager
def https_server(ca: LocalCA, routes: dict[str, Route]) -> Iterator[tuple[int, list[str]]]:
    """Serve ``routes`` on 127.0.0.1; yields the port and the list of requested paths."""
    requested: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requested.append(self.path)
            route = routes.get(self.path, Route(b"not found", 404))
            if route.delay:
                time.sleep(route.delay)
            self.send_response(route.status)
            for k, v in route.headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            with suppress(OSError):
                self.wfile.write(route.body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(ca.cert_file, ca.key_file)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield server.server_address[1], requested
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
