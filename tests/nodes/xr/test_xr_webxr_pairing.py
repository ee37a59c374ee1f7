"""What the WebXR node prints for a newcomer: every address, the first as a QR code,
and the fingerprint of the certificate the browser will ask to accept."""

from __future__ import annotations

import subprocess
from pathlib import Path

from teledora.devices.xr.webxr_certificate import CERT_FILE, fingerprint_sha256
from teledora.nodes.xr import xr_webxr
from teledora.operators.xr.pairing_qr import qr_text


def test_banner_holds_the_addresses_their_qr_code_and_the_certificate_fingerprint(tmp_path: Path):
    server = xr_webxr.build_server(xr_webxr.parse_args(
        ["--host", "127.0.0.1", "--port", "8443", "--cert-dir", str(tmp_path), "--token", "tok123"]))
    banner = xr_webxr.pairing_banner(server)
    url = "https://127.0.0.1:8443/?token=tok123"
    assert f"open {url} on the headset" in banner
    assert qr_text(url) in banner
    fp = fingerprint_sha256(tmp_path / CERT_FILE)
    assert server.certificate_fingerprint == fp and fp in banner
    # the fingerprint is the one openssl (and so a browser) computes for the certificate
    out = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", str(tmp_path / CERT_FILE)],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip().split("=", 1)[1] == fp


def test_plain_http_has_no_certificate_to_accept(tmp_path: Path):
    server = xr_webxr.build_server(xr_webxr.parse_args(["--plain-http", "--port", "8080", "--token", "t"]))
    banner = xr_webxr.pairing_banner(server)
    assert "http://127.0.0.1:8080/?token=t" in banner and "fingerprint" not in banner
