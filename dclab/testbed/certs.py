"""Self-signed certificates for the emulated servers (made per run, never reused)."""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ..endpoints.base import Certs


def make_certs(directory: Path, address: str, name: str = "dclab.test") -> Certs:
    """An ECDSA P-256 key and a self-signed certificate valid for ``address`` and ``name``."""
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName(name), x509.IPAddress(ipaddress.ip_address(address))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certs = Certs(cert=directory / "cert.pem", key=directory / "key.pem")
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    certs.key.unlink(missing_ok=True)  # a fresh file: O_EXCL below, and never another's mode or link
    fd = os.open(certs.key, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)  # 0600 from the start
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
    certs.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return certs
