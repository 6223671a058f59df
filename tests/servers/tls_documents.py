"""An HTTPS server on 127.0.0.1 serving fixed documents, with its own certificate authority.

For what ToolHub fetches over TLS from a client (an OAuth client's metadata document):
the CA's PEM file is what the fetching process trusts (``SSL_CERT_FILE``). A path
listed in ``stall`` never answers (a hanging host); one in ``drip`` answers a byte a
second (a host holding the reader).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_authority(directory: Path) -> tuple[Path, Path, Path]:
    """(ca.pem, server.pem, server.key) for 127.0.0.1, in ``directory``."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("ToolHub test CA"))
        .issuer_name(_name("ToolHub test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


class DocumentServer:
    def __init__(self, directory: Path):
        self.ca, cert, key = make_authority(directory)
        self.documents: dict[str, tuple[bytes, str]] = {}
        self.stall: set[str] = set()
        self.drip: set[str] = set()  # answers, then a byte a second
        self.hits: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server.hits.append(self.path)
                if self.path in server.stall:
                    time.sleep(30)
                    return
                if self.path in server.drip:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "60")
                    self.end_headers()
                    for _ in range(60):
                        try:
                            self.wfile.write(b" ")
                            self.wfile.flush()
                        except OSError:
                            return
                        time.sleep(1)
                    return
                body, kind = server.documents.get(self.path, (b"{}", ""))
                if not kind:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def origin(self) -> str:
        return f"https://127.0.0.1:{self.httpd.server_address[1]}"

    def serve_json(self, path: str, document, kind: str = "application/json") -> str:
        raw = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.documents[path] = (raw, kind)
        return self.origin + path

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
