"""Fixtures for the WeChat sandbox tests: a sandbox per test, wechatpy clients pointed at it."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from sandbox_helpers import make_pay

from wechat_sandbox import SandboxConfig, SandboxServer


@pytest.fixture
def sandbox():
    """A sandbox that sends nothing until ``deliver_pending`` (``auto_notify=False``)."""
    with SandboxServer(config=SandboxConfig(retry_scale=0.001), auto_notify=False) as server:
        yield server


@pytest.fixture(scope="session")
def cert_pair(tmp_path_factory) -> tuple[str, str]:
    """A throwaway self-signed PEM pair: wechatpy's refund needs mch_cert/mch_key files."""
    directory = tmp_path_factory.mktemp("mch_cert")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "1900000109")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "apiclient_cert.pem", directory / "apiclient_key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    return str(cert_path), str(key_path)


@pytest.fixture
def wxpay(sandbox, cert_pair):
    return make_pay(sandbox.url, cert=cert_pair)


# The suite-wide conftest makes every test reset its session sandbox (through Django's
# ``settings`` fixture) and clean Redis. Sandbox tests use neither Django nor Redis: these
# same-named fixtures replace those autouse ones here, so this directory also runs with
# ``-p no:django`` when the Django settings are broken.
@pytest.fixture(autouse=True)
def wechat():
    yield None


@pytest.fixture(autouse=True)
def _clean_redis():
    yield
