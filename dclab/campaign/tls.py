"""A lab's certificates for a campaign's Dask cluster (mutual TLS). Dask runs whatever
pickled code a cluster member sends: the scheduler's tasks on the workers (as root, with
`dclab worker`), a worker's results in the coordinator. So who may join is the whole of
its security: a scheduler, workers and coordinator that hold a certificate signed by the
lab's own CA, and nothing else (`require_encryption`: no plain TCP anywhere).

``make_lab_certs(DIR)`` writes one set::

    DIR/ca.pem                                   the lab CA's certificate
    DIR/scheduler/{ca.pem,cert.pem,key.pem}      for `dask scheduler`
    DIR/worker/{ca.pem,cert.pem,key.pem}         for `dclab worker --tls-dir` (every worker)
    DIR/coordinator/{ca.pem,cert.pem,key.pem}    for `dclab campaign run --tls-dir`

The CA's private key is never written: nobody can sign another certificate for the lab,
and a new set replaces the whole (Dask checks no names, and there is no revocation). Keys
are created 0600 (os.open with that mode, never written and then narrowed) and no file
that exists is overwritten."""

from __future__ import annotations

import contextlib
import datetime
import os
import ssl
import stat
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ROLES = ("scheduler", "worker", "coordinator")
FILES = ("ca.pem", "cert.pem", "key.pem")  # in each role's directory
DEFAULT_DAYS = 365


class TLSError(ValueError):
    """Certificates that cannot be made or used, with the reason in words."""


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "dclab lab"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(days: int) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("dclab lab CA"))
        .issuer_name(_name("dclab lab CA"))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(role: str, ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate,
          days: int) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A certificate for ``role`` signed by the CA; for server and client use both (a
    scheduler and a worker each listen and connect)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(f"dclab {role}"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False, crl_sign=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(f"dclab-{role}")]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Creates ``path`` with ``mode`` from the start; refuses one that exists (or a symlink)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError:
        raise TLSError(f"{path} exists: dclab never overwrites certificates (choose a new directory)") from None
    except OSError as e:
        raise TLSError(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:  # a full disk: no empty or partial file is left
        path.unlink(missing_ok=True)
        raise TLSError(f"cannot write {path}: {e.strerror or e}") from None


def lab_files(directory: Path) -> list[Path]:
    """Every file ``make_lab_certs(directory)`` writes."""
    return [directory / "ca.pem", *(directory / role / f for role in ROLES for f in FILES)]


def make_lab_certs(directory: Path, days: int = DEFAULT_DAYS) -> list[Path]:
    """Writes a lab's CA certificate and a signed certificate and key per role (see the
    module's docstring) and returns the files written. Refuses, before writing anything,
    a directory that is not new or empty; directories it makes are 0700. All or nothing:
    a write that fails (a full disk) removes what this call wrote and made."""
    if not 1 <= days <= 3650:
        raise TLSError(f"days: {days} is not within 1-3650")
    targets = lab_files(directory)
    there = [p for p in targets if os.path.lexists(p)]
    if there:
        raise TLSError(f"{there[0]} exists: dclab never overwrites certificates (choose a new directory)")
    if directory.is_dir() and not directory.is_symlink() and any(directory.iterdir()):
        raise TLSError(f"{directory} is not empty: a lab's certificates go into a new or empty directory")
    made: list[Path] = []
    written: list[Path] = []
    try:
        for d in (directory, *(directory / role for role in ROLES)):
            try:
                d.mkdir(mode=0o700, parents=d == directory)
                made.append(d)
            except FileExistsError:
                if d.is_symlink() or not d.is_dir():
                    raise TLSError(f"{d} is not a directory") from None
            except OSError as e:
                raise TLSError(f"cannot make {d}: {e.strerror or e}") from None
        _write_all(directory, days, written)
    except TLSError as e:
        for p in written:
            p.unlink(missing_ok=True)
        for d in reversed(made):
            with contextlib.suppress(OSError):
                d.rmdir()
        raise TLSError(f"{e} (nothing was kept)") from None
    return written


def _write_all(directory: Path, days: int, written: list[Path]) -> None:
    """The files of ``make_lab_certs``, each added to ``written`` once it is whole."""
    ca_key, ca = _ca(days)  # the CA's key lives only in this process
    _write_new(directory / "ca.pem", _pem(ca), 0o644)
    written.append(directory / "ca.pem")
    for role in ROLES:
        key, cert = _leaf(role, ca_key, ca, days)
        d = directory / role
        for name, data, mode in (("key.pem", key.private_bytes(serialization.Encoding.PEM,
                                                               serialization.PrivateFormat.PKCS8,
                                                               serialization.NoEncryption()), 0o600),
                                 ("cert.pem", _pem(cert), 0o644), ("ca.pem", _pem(ca), 0o644)):
            _write_new(d / name, data, mode)
            written.append(d / name)


def role_files(tls_dir: Path) -> tuple[Path, Path, Path]:
    """The CA certificate, certificate and key in one role's directory, checked: each a
    regular file, the key readable by its owner only, and the certificate the key's and
    loadable with the CA (so a wrong file is named now, not as a failed handshake later)."""
    ca, cert, key = (tls_dir / f for f in FILES)
    for p in (ca, cert, key):
        try:
            st = os.stat(p)
        except OSError as e:
            raise TLSError(f"--tls-dir: cannot read {p}: {e.strerror or e} (`dclab cluster certs DIR` makes a lab's "
                           "set: give its scheduler/, worker/ or coordinator/ directory)") from None
        if not stat.S_ISREG(st.st_mode):
            raise TLSError(f"--tls-dir: {p} is not a regular file")
        if p == key and st.st_mode & 0o077:
            raise TLSError(f"--tls-dir: {key} is readable by others (mode {stat.S_IMODE(st.st_mode):04o}): whoever reads "
                           f"it can join the cluster; `chmod 600 {key}`")
    try:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca))
        ctx.load_cert_chain(str(cert), str(key))
    except (ssl.SSLError, OSError, ValueError) as e:
        raise TLSError(f"--tls-dir: {tls_dir}: the CA, certificate and key do not load together: {e}") from None
    try:
        leaf = x509.load_pem_x509_certificate(cert.read_bytes())
        leaf.verify_directly_issued_by(x509.load_pem_x509_certificate(ca.read_bytes()))
    except (ValueError, TypeError, InvalidSignature) as e:
        raise TLSError(f"--tls-dir: {cert} is not signed by {ca} ({e or type(e).__name__}): "
                       "both must come from one `dclab cluster certs` set") from None
    return ca, cert, key


def security(role: str, tls_dir: Path) -> Any:
    """Dask's Security for ``role`` ('worker' or 'client', the coordinator) from a role's
    directory: mutual TLS with the lab's CA, encryption required."""
    from distributed.security import Security

    if role not in ("worker", "client"):
        raise ValueError(role)
    ca, cert, key = role_files(tls_dir)
    return Security(require_encryption=True, tls_ca_file=str(ca), **{f"tls_{role}_cert": str(cert),
                                                                     f"tls_{role}_key": str(key)})


def local_security() -> Any:
    """For a local cluster the coordinator starts: a throwaway certificate held in memory,
    shared by its scheduler, workers and client (no process without it can connect)."""
    from distributed.security import Security

    return Security.temporary()


def scheduler_command(tls_dir: Path, host: str = "HOST", port: int = 8786) -> str:
    """The `dask scheduler` command line with the scheduler's files in ``tls_dir`` (its
    HTTP server, unauthenticated even with --no-dashboard, on 127.0.0.1 only)."""
    return (f"dask scheduler --protocol tls --host {host} --port {port} --no-dashboard --dashboard-address 127.0.0.1:8787 "
            f"--tls-ca-file {tls_dir / 'ca.pem'} --tls-cert {tls_dir / 'cert.pem'} --tls-key {tls_dir / 'key.pem'}")
