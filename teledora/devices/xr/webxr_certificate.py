"""Self-signed TLS certificate for the WebXR page (browsers only grant WebXR to
secure contexts, and a headset reaches the host by IP or ``<host>.local``).

The certificate is an EC P-256 key with the host's addresses and names in its
SubjectAltName and the serverAuth extended key usage, valid 825 days (the
longest lifetime Apple/Chromium platforms accept for a server certificate).
It is generated on first start into a directory and reused while it still
covers every current address, so the headset only has to accept it once.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY_DAYS = 825
CERT_FILE, KEY_FILE = "webxr-cert.pem", "webxr-key.pem"


@dataclass(frozen=True)
class CertificatePaths:
    cert: Path
    key: Path
    created: bool  # False when an existing certificate was reused


def host_addresses() -> list[str]:
    """IPv4 addresses this host is likely reachable on (loopback included)."""
    found = {"127.0.0.1"}
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            found.add(info[4][0])
    except OSError:
        pass
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:  # connecting a UDP socket sends nothing; it only picks the outgoing interface
        probe.connect(("10.255.255.255", 1))
        found.add(probe.getsockname()[0])
    except OSError:
        pass
    finally:
        probe.close()
    return sorted(found, key=lambda a: (a.startswith("127."), a))


def host_names() -> list[str]:
    host = socket.gethostname().split(".")[0]
    return sorted({"localhost", host, f"{host}.local"})


def _covers(cert_path: Path, addresses: list[str], names: list[str]) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (OSError, ValueError, x509.ExtensionNotFound):
        return False
    have_ips = {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}
    have_names = set(san.get_values_for_type(x509.DNSName))
    still_valid = cert.not_valid_after_utc > datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    return still_valid and set(addresses) <= have_ips and set(names) <= have_names


def ensure_certificate(directory: Path, addresses: list[str] | None = None, names: list[str] | None = None,
                       now: datetime.datetime | None = None) -> CertificatePaths:
    """Returns a certificate/key pair in ``directory``, generating one if none covers the host."""
    addresses = addresses if addresses is not None else host_addresses()
    names = names if names is not None else host_names()
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / CERT_FILE, directory / KEY_FILE
    if cert_path.exists() and key_path.exists() and _covers(cert_path, addresses, names):
        return CertificatePaths(cert_path, key_path, created=False)
    key = ec.generate_private_key(ec.SECP256R1())
    now = now or datetime.datetime.now(datetime.timezone.utc)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"teledora webxr {names[0] if names else ''}".strip())])
    san = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALIDITY_DAYS))
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return CertificatePaths(cert_path, key_path, created=True)


def fingerprint_sha256(cert_path: Path) -> str:
    """The certificate's SHA-256 fingerprint as browsers show it (colon-separated hex pairs),
    for the operator to compare before accepting the self-signed certificate."""
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    return ":".join(f"{b:02X}" for b in cert.fingerprint(hashes.SHA256()))
